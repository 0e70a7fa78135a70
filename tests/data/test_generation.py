"""create_pretraining_data's pairs per sentence task (`generate`, the tool's library call),
decoded from the records and checked against pairs worked out by hand for a corpus whose
every chunk is a whole document (faithfulness §5.3–§5.4, Q10)."""

from __future__ import annotations

import collections
import os

import pytest

from albert_tf.data import features as F
from albert_tf.data.example_codec import decode_example
from albert_tf.data.generation import GenerationOptions, generate
from albert_tf.data.masking import MaskingOptions
from albert_tf.data.tfrecord_io import read_records
from albert_tf.tokenization import FullTokenizer

PAIRED_DOCS, SINGLE_DOCS = range(6), range(6, 8)
DUPE_FACTOR = 30


def sentence(kind: str, doc: int) -> list[str]:
    """Three tokens that name their document and place: p = first, q = second sentence of a
    two-sentence document, s = the only sentence of a one-sentence document."""
    return [f"{kind}{doc}"] * 3


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Six two-sentence and two one-sentence documents of 3-token sentences. With
    max_seq_length 32 and short_seq_prob 0 the target is 29 tokens, so every document is one
    chunk, closed at its end; a two-sentence chunk is always split after its first sentence."""
    directory = tmp_path_factory.mktemp("generation")
    docs = [[sentence("p", d), sentence("q", d)] for d in PAIRED_DOCS]
    docs += [[sentence("s", d)] for d in SINGLE_DOCS]
    text = directory / "corpus.txt"
    text.write_text("\n\n".join("\n".join(" ".join(s) for s in doc) for doc in docs) + "\n")
    words = sorted({w for doc in docs for s in doc for w in s})
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return str(text), FullTokenizer(vocab_file=str(vocab))


def pairs_of(corpus, tmp_path, task: str, skip_single: bool = False) -> list[tuple[str, str, int]]:
    """(A, B, label) per record: A and B as the sentence names they hold ("p3", "q3 p5", …)."""
    text, tokenizer = corpus
    masking = MaskingOptions(vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id,
                             cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                             max_predictions_per_seq=4)
    path = str(tmp_path / f"{task}-{skip_single}.tfrecord")
    generate(text, [path], tokenizer, GenerationOptions(
        max_seq_length=32, dupe_factor=DUPE_FACTOR, short_seq_prob=0.0, sentence_prediction=task,
        skip_single_sentence_chunks=skip_single, record_kind=F.DYNAMIC, masking=masking),
        log=lambda message: None)
    pairs = []
    for record in read_records(path):
        features = decode_example(record)  # unmasked: dynamic-masking records
        tokens = tokenizer.convert_ids_to_tokens([i for i in features["input_ids"] if i])
        first = tokens.index("[SEP]")
        a, b = tokens[1:first], tokens[first + 1:-1]
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        pairs.append((names(a), names(b), int(features["next_sentence_labels"][0])))
    return pairs


def names(tokens: list[str]) -> str:
    """["p1", "p1", "p1", "q1", "q1", "q1"] → "p1 q1" (every sentence is whole here)."""
    assert len(tokens) % 3 == 0
    sentences = [tokens[i:i + 3] for i in range(0, len(tokens), 3)]
    assert all(len(set(s)) == 1 for s in sentences), tokens
    return " ".join(s[0] for s in sentences)


def doc_of(name: str) -> int:
    return int(name.split()[0][1:])


def other_document(a: str, b: str) -> bool:
    """B is a whole tail of another document: "p5 q5", "q5" or "s7"."""
    return doc_of(b) != doc_of(a) and b in (f"p{doc_of(b)} q{doc_of(b)}", f"q{doc_of(b)}",
                                              f"s{doc_of(b)}")


def classify(pairs) -> collections.Counter:
    """Counts each pair under the hand-worked case it matches; "unexpected" otherwise."""
    counts = collections.Counter()
    for a, b, label in pairs:
        d = doc_of(a)
        if (a, b, label) == (f"p{d}", f"q{d}", 0):
            counts["in order"] += 1
        elif (a, b, label) == (f"q{d}", f"p{d}", 1):
            counts["swapped"] += 1
        elif label == 1 and a == f"p{d}" and d in PAIRED_DOCS and other_document(a, b):
            counts["p + random B"] += 1
        elif label == 1 and a == f"q{d}" and other_document(a, b):
            counts["q put back + random B"] += 1
        elif label == 1 and a == f"s{d}" and other_document(a, b):
            counts["single + random B"] += 1
        else:
            counts["unexpected"] += 1
    return counts


def test_sop_pairs_are_in_order_or_swapped(corpus, tmp_path):
    """SOP: a two-sentence document gives (p, q, 0) or (q, p, 1), once per pass; a
    one-sentence document (p, B from another document, 1) (Q10)."""
    counts = classify(pairs_of(corpus, tmp_path, "sop"))
    assert set(counts) == {"in order", "swapped", "single + random B"}
    assert counts["in order"] + counts["swapped"] == DUPE_FACTOR * len(PAIRED_DOCS)
    assert counts["single + random B"] == DUPE_FACTOR * len(SINGLE_DOCS)
    assert 60 < counts["swapped"] < 120  # a fair coin over 180 pairs


def test_none_pairs_are_sop_pairs_never_swapped(corpus, tmp_path):
    none = pairs_of(corpus, tmp_path, "none")
    counts = classify(none)
    assert counts == {"in order": DUPE_FACTOR * len(PAIRED_DOCS),
                      "single + random B": DUPE_FACTOR * len(SINGLE_DOCS)}
    # The same random stream as SOP: the one-sentence chunks draw the same random B.
    sop_singles = sorted(p for p in pairs_of(corpus, tmp_path, "sop") if p[0].startswith("s"))
    assert sorted(p for p in none if p[0].startswith("s")) == sop_singles


def test_nsp_pairs_take_b_from_another_document(corpus, tmp_path):
    """NSP: (p, q, 0), or (p, random B, 1) after which q is put back and, a one-sentence chunk
    now, gets a random B too (Q10); never a swap."""
    counts = classify(pairs_of(corpus, tmp_path, "nsp"))
    assert set(counts) == {"in order", "p + random B", "q put back + random B", "single + random B"}
    assert counts["q put back + random B"] == counts["p + random B"]
    assert counts["in order"] + counts["p + random B"] == DUPE_FACTOR * len(PAIRED_DOCS)
    assert 60 < counts["p + random B"] < 120


@pytest.mark.parametrize("task,expected", [
    ("sop", {"in order", "swapped"}),
    ("nsp", {"in order", "p + random B"}),
    ("none", {"in order"}),
])
def test_skipping_single_sentence_chunks_leaves_each_task_its_own_labels(corpus, tmp_path, task,
                                                                         expected):
    """--skip_single_sentence_chunks: no one-sentence chunk (neither a one-sentence document nor
    NSP's put-back q), so label 1 means a swap (SOP) or a random B from a two-sentence chunk (NSP)."""
    counts = classify(pairs_of(corpus, tmp_path, task, skip_single=True))
    assert set(counts) == expected
    assert sum(counts.values()) == DUPE_FACTOR * len(PAIRED_DOCS)


def test_an_output_that_cannot_be_opened_leaves_no_other_output_or_temporary(corpus, tmp_path):
    """All-or-nothing over the outputs: the second cannot be created (its parent is a file),
    so the first one's temporary is removed too."""
    text, tokenizer = corpus
    masking = MaskingOptions(vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id,
                             cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                             max_predictions_per_seq=4)
    (tmp_path / "blocked").write_text("a file, not a directory")
    with pytest.raises(OSError):
        generate(text, [str(tmp_path / "first.tfrecord"), str(tmp_path / "blocked" / "second.tfrecord")],
                 tokenizer, GenerationOptions(max_seq_length=32, dupe_factor=1, masking=masking),
                 log=lambda message: None)
    assert sorted(os.listdir(tmp_path)) == ["blocked"]
