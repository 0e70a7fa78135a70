"""Preprocessing export vs the Python pipeline: FullTokenizer + the GLUE feature builder."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export import AlbertPreprocessor
from albert_tf.export.tfhub import export_preprocessing
from albert_tf.glue.features import pack_tokens, truncate_seq_pair
from albert_tf.tokenization import FullTokenizer, preprocess_text
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

HARD_CASES = [
    "Café crème brûlée at the Hôtel Ñandú, naïve façade.", "ÀÉÎÕÜ àéîõü ÇĆČ",
    "In 1998, about 1,000,000 people paid $3,50 each; 7,5% said 2,000.", "It was 1998,and 42,",
    "日本語のテキストと中文字符混合 with English.", "한국어 문장입니다.",
    "Tabs\tand\nnewlines  and\u00a0non-breaking\u2003spaces", "   leading and trailing   ",
    "UPPER lower MiXeD", "Quotes: \"double\", 'single', ``backticks''", "Emoji 😀 and symbols ©®™",
    "Ligatures ﬁ ﬂ and full-width ＡＢＣ１２３", "Dashes – — and ellipsis …", "", " ",
]


@pytest.fixture(scope="module")
def pipelines(text_assets, tmp_path_factory):  # noqa: F811
    path = str(tmp_path_factory.mktemp("pre") / "preprocess")
    export_preprocessing(text_assets.spm_model, path, do_lower_case=True, seq_length=64)
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    sentences = [line.strip() for line in open(text_assets.corpus, encoding="utf-8") if line.strip()]
    return tf.saved_model.load(path), tokenizer, sentences[:1500] + HARD_CASES


def python_features(tokenizer, a, b, seq_length):
    tokens_a = tokenizer.tokenize(preprocess_text(a, lower=True))
    tokens_b = None if b is None else tokenizer.tokenize(preprocess_text(b, lower=True))
    return pack_tokens(tokens_a, tokens_b, seq_length, tokenizer)


def compare(exported, tokenizer, pairs, seq_length):
    firsts = tf.constant([a for a, _ in pairs])
    if pairs[0][1] is None:
        packed = exported.bert_pack_inputs([exported.tokenize(firsts)], tf.constant(seq_length))
    else:
        seconds = tf.constant([b for _, b in pairs])
        packed = exported.bert_pack_inputs([exported.tokenize(firsts), exported.tokenize(seconds)],
                                           tf.constant(seq_length))
    got = {k: v.numpy() for k, v in packed.items()}
    differing = []
    for i, (a, b) in enumerate(pairs):
        ids, mask, types = python_features(tokenizer, a, b, seq_length)
        if not (list(got["input_word_ids"][i]) == ids and list(got["input_mask"][i]) == mask
                and list(got["input_type_ids"][i]) == types):
            differing.append((a, b))
    return differing


def test_single_sentences_agree_with_the_python_pipeline(pipelines):
    exported, tokenizer, sentences = pipelines
    differing = compare(exported, tokenizer, [(s, None) for s in sentences], 64)
    print(f"{len(differing)} of {len(sentences)} single sentences differ:", *differing, sep="\n  ")
    assert len(differing) <= 0.01 * len(sentences)
    # The hand-picked hard cases agree one by one (accents, digit commas, CJK, whitespace).
    hard = compare(exported, tokenizer, [(s, None) for s in HARD_CASES], 64)
    assert not hard, hard


def test_pairs_agree_including_truncation(pipelines):
    exported, tokenizer, sentences = pipelines
    pairs = list(zip(sentences[:-1:2], sentences[1::2]))
    differing = compare(exported, tokenizer, pairs, 24)  # short: most pairs get truncated
    print(f"{len(differing)} of {len(pairs)} pairs differ:", *differing, sep="\n  ")
    assert len(differing) <= 0.01 * len(pairs)


def test_empty_second_segments_pack_as_single_sentences(pipelines):
    """Rows whose second text has no pieces agree with the GLUE features' `[CLS] a [SEP]`
    (single-sentence truncation), in the same batch as ordinary pairs."""
    exported, tokenizer, sentences = pipelines
    empty = ["", "   ", "\u0301", "\t\n"]
    long_first = " ".join(sentences[:6])  # longer than the sequence: truncation matters
    pairs = [(long_first, b) for b in empty] + [(s, b) for s, b in zip(sentences[6:10], empty)]
    pairs += list(zip(sentences[10:14], sentences[14:18]))
    assert not compare(exported, tokenizer, pairs, 24)
    packed = exported.bert_pack_inputs([exported.tokenize(tf.constant([long_first])),
                                        exported.tokenize(tf.constant([""]))], tf.constant(24))
    ids = packed["input_word_ids"].numpy()[0]
    assert ids[-1] == tokenizer.sep_id and list(ids).count(tokenizer.sep_id) == 1
    assert not packed["input_type_ids"].numpy().any()


def test_shortest_lengths_and_nested_segments(pipelines):
    """The packer's edges: sequence lengths that leave a few or no pieces agree with the
    Python features; ragged-rank-2 segments (words → pieces) pack as their merged ids."""
    exported, tokenizer, sentences = pipelines
    pairs = list(zip(sentences[20:40:2], sentences[21:41:2])) + [(sentences[0], ""), ("", sentences[1])]
    for seq_length in (3, 4, 5, 8):
        assert not compare(exported, tokenizer, pairs, seq_length), seq_length
        assert not compare(exported, tokenizer, [(a, None) for a, _ in pairs], seq_length), seq_length
    words = [s.split() for s in sentences[40:46]] + [[]]
    per_word = [exported.tokenize(tf.constant(w, tf.string)) for w in words]  # [words, (pieces)]
    nested = tf.RaggedTensor.from_row_lengths(tf.concat(per_word, axis=0), [len(w) for w in words])
    merged = tf.ragged.constant([sum(p.to_list(), []) for p in per_word], tf.int32, ragged_rank=1)
    assert nested.ragged_rank == 2
    for segments, flat in (([nested], [merged]), ([nested, nested[::-1]], [merged, merged[::-1]])):
        for seq_length in ([], [tf.constant(12)]):
            got = exported.bert_pack_inputs(segments, *seq_length)
            want = exported.bert_pack_inputs(flat, *seq_length)
            for key in want:
                np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())


def test_root_call_and_special_tokens(pipelines):
    exported, tokenizer, _ = pipelines
    out = exported(tf.constant(["Hello world", "A second, longer sentence."]))
    assert out["input_word_ids"].shape == (2, 64) and out["input_word_ids"].dtype == tf.int32
    assert list(out["input_word_ids"][0].numpy()) == python_features(tokenizer, "Hello world", None, 64)[0]
    special = {k: int(v) for k, v in exported.tokenize.get_special_tokens_dict().items()}
    assert special == {"vocab_size": tokenizer.vocab_size, "start_of_sequence_id": tokenizer.cls_id,
                       "end_of_segment_id": tokenizer.sep_id, "padding_id": tokenizer.pad_id,
                       "mask_id": tokenizer.mask_id}


def test_truncation_closed_form_equals_popping_the_longer_segment():
    cases = list(itertools.product(range(0, 12), range(0, 12), range(0, 15)))
    len_a, len_b, budget = (np.array(c, "int32") for c in zip(*cases))
    new_a, new_b = AlbertPreprocessor.truncated_lengths(tf.constant(len_a), tf.constant(len_b),
                                                        tf.constant(budget))
    for (a, b, t), got_a, got_b in zip(cases, new_a.numpy(), new_b.numpy()):
        tokens_a, tokens_b = list(range(a)), list(range(b))
        truncate_seq_pair(tokens_a, tokens_b, t)
        assert (got_a, got_b) == (len(tokens_a), len(tokens_b)), (a, b, t)
