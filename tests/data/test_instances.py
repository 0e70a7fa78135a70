"""Segment pairs (faithfulness §5.3–5.5): SOP/NSP structure and labels, truncation.

A synthetic WordPiece corpus where every token is unique ("t<global index>") lets each
record be traced back to its document and sentence positions.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from albert_tf.data import DYNAMIC, MaskingOptions
from albert_tf.data.documents import TokenizedCorpus
from albert_tf.data.generation import GenerationOptions, generate
from albert_tf.data.instances import PairBuilder
from albert_tf.data.tfrecord_io import read_records
from albert_tf.tokenization import FullTokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclasses.dataclass
class Synthetic:
    text: str
    vocab: str
    doc_of: dict  # token id → document index
    index_of: dict  # token id → global position in the text
    sentence_starts: set  # global positions that start a sentence
    sentence_ends: set  # global positions that end a sentence


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Synthetic:
    rng = random.Random(0)
    directory = tmp_path_factory.mktemp("synthetic")
    lines, doc_of, index_of, starts, ends = [], {}, {}, set(), set()
    position = 0
    for doc in range(120):
        for _ in range(rng.randint(1, 6)):
            length = rng.randint(1, 8)
            words = [f"t{position + k}" for k in range(length)]
            for k in range(length):
                token_id = len(SPECIALS) + position + k
                doc_of[token_id], index_of[token_id] = doc, position + k
            starts.add(position)
            ends.add(position + length - 1)
            position += length
            lines.append(" ".join(words))
        lines.append("")
    text = directory / "text.txt"
    text.write_text("\n".join(lines) + "\n")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + [f"t{i}" for i in range(position)]) + "\n")
    return Synthetic(str(text), str(vocab), doc_of, index_of, starts, ends)


def pairs_of(synthetic: Synthetic, tmp_path, random_next_sentence: bool) -> list[tuple[list[int], list[int], int]]:
    """(A ids, B ids, label) of unmasked records; max_seq_length is large enough that nothing
    is truncated (documents hold at most 48 tokens)."""
    tokenizer = FullTokenizer(vocab_file=synthetic.vocab)
    masking = MaskingOptions(vocab_size=tokenizer.vocab_size, mask_id=4, cls_id=2, sep_id=3)
    options = GenerationOptions(max_seq_length=128, dupe_factor=20, short_seq_prob=0.5,
                                random_next_sentence=random_next_sentence, record_kind=DYNAMIC, masking=masking)
    out = str(tmp_path / "pairs.tfrecord")
    generate(synthetic.text, [out], tokenizer, options, num_workers=1, log=lambda m: None)
    pairs = []
    for record in read_records(out):
        feature = tf.train.Example.FromString(record).features.feature
        ids = list(feature["input_ids"].int64_list.value)
        segments = list(feature["segment_ids"].int64_list.value)
        length = sum(feature["input_mask"].int64_list.value)
        first_sep = segments[:length].count(0) - 1
        assert ids[0] == 2 and ids[first_sep] == 3 and ids[length - 1] == 3
        pairs.append((ids[1:first_sep], ids[first_sep + 1:length - 1],
                      feature["next_sentence_labels"].int64_list.value[0]))
    return pairs


def classify(synthetic: Synthetic, a: list[int], b: list[int]) -> str:
    """"in_order", "swapped" or "random" from the tokens' positions in the text."""
    pos_a = [synthetic.index_of[t] for t in a]
    pos_b = [synthetic.index_of[t] for t in b]
    for pos in (pos_a, pos_b):  # every segment is a run of whole consecutive sentences
        assert pos == list(range(pos[0], pos[0] + len(pos)))
        assert pos[0] in synthetic.sentence_starts and pos[-1] in synthetic.sentence_ends
    same_doc = synthetic.doc_of[a[0]] == synthetic.doc_of[b[0]]
    if same_doc and pos_b[0] == pos_a[-1] + 1:
        return "in_order"
    if same_doc and pos_a[0] == pos_b[-1] + 1:
        return "swapped"
    return "random"


@pytest.mark.parametrize("mode", ["sop", "nsp"])
def test_pairs_are_consecutive_segments_with_correct_labels(synthetic, tmp_path, mode):
    pairs = pairs_of(synthetic, tmp_path, random_next_sentence=(mode == "nsp"))
    assert len(pairs) > 500
    kinds = {"in_order": 0, "swapped": 0, "random": 0}
    for a, b, label in pairs:
        kind = classify(synthetic, a, b)
        kinds[kind] += 1
        if kind == "in_order":
            assert label == 0
        else:
            assert label == 1  # 1 = swapped (SOP) or random (NSP / single-sentence chunk, Q10)
        if mode == "sop" and kind == "random":
            # SOP takes a random document only for a one-sentence chunk (Q10): A is one sentence.
            positions = [synthetic.index_of[t] for t in a]
            assert sum(p in synthetic.sentence_starts for p in positions) == 1
        if mode == "nsp":
            assert kind != "swapped"
    if mode == "sop":
        # Multi-sentence chunks: swapped with probability 1/2.
        swapped, total = kinds["swapped"], kinds["swapped"] + kinds["in_order"]
        assert stats.binomtest(swapped, total, 0.5).pvalue > 1e-3, kinds
    else:
        assert kinds["in_order"] > 0 and kinds["random"] > 0


def toy_corpus(sentence_lengths: list[list[int]]) -> TokenizedCorpus:
    lengths = [n for doc in sentence_lengths for n in doc]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    counts = np.cumsum([0] + [len(doc) for doc in sentence_lengths])
    total = int(offsets[-1])
    return TokenizedCorpus(np.arange(total, dtype=np.int32) + 10, np.ones(total, bool), offsets,
                           counts[:-1].astype(np.int64), counts[1:].astype(np.int64))


def test_truncation_keeps_both_segments_within_limit():
    """§5.5: pairs fit max_seq_length − 3, keep ≥ 1 token each, and stay contiguous runs."""
    rng = np.random.default_rng(0)
    corpus = toy_corpus([rng.integers(1, 40, rng.integers(1, 8)).tolist() for _ in range(50)])
    for max_seq_length in (5, 8, 32):
        builder = PairBuilder(corpus, max_seq_length, short_seq_prob=0.1, random_next_sentence=False)
        py_rng = random.Random(1)
        for doc in range(corpus.num_documents):
            for a0, a1, b0, b1, label in builder(py_rng, doc):
                assert a1 - a0 >= 1 and b1 - b0 >= 1
                assert (a1 - a0) + (b1 - b0) <= max_seq_length - 3
                assert label in (0, 1)


def test_truncation_trims_the_longer_segment_at_random_ends():
    """A 1-token sentence then a 100-token one, max_num_tokens 20: the chunk splits into the two
    sentences; the 100-token segment (the longer one, in either order) loses 81 tokens, each
    from the front or the back with probability 1/2; the short one is never trimmed."""
    corpus = toy_corpus([[1, 100]] * 2)
    builder = PairBuilder(corpus, max_seq_length=23, short_seq_prob=0.0, random_next_sentence=False)
    fronts, labels = [], []
    for seed in range(300):
        (a0, a1, b0, b1, label), = builder(random.Random(seed), 0)
        short, long = ((a0, a1), (b0, b1)) if label == 0 else ((b0, b1), (a0, a1))
        assert short == (0, 1) and long[1] - long[0] == 19
        fronts.append(long[0] - 1)  # tokens deleted at the front ~ Binomial(81, 1/2)
        labels.append(label)
    assert abs(np.mean(fronts) - 40.5) < 4 * np.sqrt(81 / 4 / len(fronts))
    assert stats.binomtest(sum(labels), len(labels), 0.5).pvalue > 1e-3


def builder_pairs(corpus: TokenizedCorpus, seed: int, **options) -> list:
    """Every document's pairs with one seeded stream, as generation draws them (per block)."""
    builder = PairBuilder(corpus, max_seq_length=20, short_seq_prob=0.2, **options)
    rng = random.Random(seed)
    return [pair for doc in range(corpus.num_documents) for pair in builder(rng, doc)]


def document_of(corpus: TokenizedCorpus, token: int) -> int:
    sentence = int(np.searchsorted(corpus.sentence_offsets, token, side="right")) - 1
    return int(np.searchsorted(corpus.doc_starts, sentence, side="right")) - 1


def is_swap(corpus: TokenizedCorpus, pair) -> bool:
    """Label 1 with B taken from before A in A's own document (SOP's swap, not a random B)."""
    return (pair.label == 1 and pair.b_end <= pair.a_start
            and document_of(corpus, pair.a_start) == document_of(corpus, pair.b_start))


@pytest.fixture(scope="module")
def varied_corpus() -> TokenizedCorpus:
    rng = np.random.default_rng(3)
    return toy_corpus([rng.integers(1, 9, rng.integers(1, 7)).tolist() for _ in range(80)])


def test_task_none_is_sop_with_every_swap_undone(varied_corpus):
    """--sentence_prediction=none: the pairs of SOP for the seed, never swapped: a swapped SOP
    pair comes back in text order (same chunk and length; the trimmed ends may differ, since
    truncation favours B), every other pair is identical, and so is the random stream."""
    for seed in range(5):
        sop = builder_pairs(varied_corpus, seed, random_next_sentence=False)
        none = builder_pairs(varied_corpus, seed, random_next_sentence=False, keep_order=True)
        assert len(sop) == len(none)
        swaps = 0
        for s, n in zip(sop, none):
            if is_swap(varied_corpus, s):
                swaps += 1
                assert n.label == 0 and n.a_end <= n.b_start
                assert document_of(varied_corpus, n.a_start) == document_of(varied_corpus, s.a_start)
                assert (n.a_end - n.a_start) + (n.b_end - n.b_start) == \
                    (s.a_end - s.a_start) + (s.b_end - s.b_start)
            else:
                assert n == s
        assert swaps > 0


def test_skipping_single_sentence_chunks_leaves_the_other_pairs_unchanged(varied_corpus):
    """--skip_single_sentence_chunks drops exactly the pairs whose A is a one-sentence chunk
    (B from a random document) and draws the same random stream for the rest."""
    offsets = set(varied_corpus.sentence_offsets.tolist())
    for nsp in (False, True):
        full = builder_pairs(varied_corpus, 7, random_next_sentence=nsp)
        kept = builder_pairs(varied_corpus, 7, random_next_sentence=nsp, skip_single_sentence_chunks=True)
        assert 0 < len(kept) < len(full)
        assert set(kept) <= set(full)
        for pair in set(full) - set(kept):
            # A dropped pair: label 1, B from elsewhere, A one whole sentence (untruncated or
            # trimmed: at most one sentence boundary inside it).
            assert pair.label == 1
            inner_starts = [o for o in offsets if pair.a_start < o < pair.a_end]
            assert not inner_starts
        if not nsp:  # SOP: every kept label-1 pair is a swap, never a random B
            assert all(is_swap(varied_corpus, p) for p in kept if p.label == 1)
        else:  # NSP: no swaps; the coin's random Bs remain
            assert not any(is_swap(varied_corpus, p) for p in kept)
            assert any(p.label == 1 for p in kept)


def test_generation_options_name_the_task_and_refuse_conflicts():
    assert GenerationOptions().sentence_task == "sop"
    assert GenerationOptions(random_next_sentence=True).sentence_task == "nsp"
    assert GenerationOptions(sentence_prediction="none").sentence_task == "none"
    with pytest.raises(ValueError, match="--random_next_sentence conflicts with --sentence_prediction=sop"):
        GenerationOptions(random_next_sentence=True, sentence_prediction="sop").validate()
    with pytest.raises(ValueError, match="--sentence_prediction=nope"):
        GenerationOptions(sentence_prediction="nope").validate()
