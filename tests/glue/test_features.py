"""Pair features equal hand-computed ids, segment ids and truncation (faithfulness §8.3)."""

from __future__ import annotations

import pytest

from albert_tf.glue import (GlueProcessor, InputExample, convert_examples_to_features,
                            convert_single_example, get_task, truncate_seq_pair)
from albert_tf.tokenization import FullTokenizer, preprocess_text

# Vocabulary (tests/glue/conftest.py): [PAD]0 [UNK]1 [CLS]2 [SEP]3 [MASK]4 the5 cat6 sat7 on8
# mat9 dog10 ran11 ##s12 away13 .14
A = "The cat sat on the mat."   # the cat sat on the mat .  → 5 6 7 8 5 9 14
B = "Dogs ran away."            # dog ##s ran away .        → 10 12 11 13 14


@pytest.fixture(scope="module")
def wordpiece(wordpiece_vocab):
    return FullTokenizer(vocab_file=wordpiece_vocab, do_lower_case=True)


def test_pair_layout_segments_and_padding(wordpiece):
    features = convert_single_example(InputExample("x", A, B, "1"), {"0": 0, "1": 1}, 20, wordpiece)
    assert features.input_ids == [2, 5, 6, 7, 8, 5, 9, 14, 3, 10, 12, 11, 13, 14, 3, 0, 0, 0, 0, 0]
    assert features.segment_ids == [0] * 9 + [1] * 6 + [0] * 5
    assert features.input_mask == [1] * 15 + [0] * 5
    assert features.label_id == 1


def test_longest_first_truncation_pops_b_on_ties(wordpiece):
    # Budget 10 − 3 = 7 of 7 + 5 tokens: a→6, a→5, tie→b 4, a→4, tie→b 3.
    features = convert_single_example(InputExample("x", A, B, "0"), {"0": 0, "1": 1}, 10, wordpiece)
    assert features.input_ids == [2, 5, 6, 7, 8, 3, 10, 12, 11, 3]
    assert features.segment_ids == [0] * 6 + [1] * 4
    assert features.input_mask == [1] * 10
    a, b = list("abcdefg"), list("xyz")
    truncate_seq_pair(a, b, 6)
    assert (a, b) == (list("abc"), list("xyz"))


def test_single_sentence_keeps_its_first_tokens(wordpiece):
    features = convert_single_example(InputExample("x", A, None, "1"), {"0": 0, "1": 1}, 6, wordpiece)
    assert features.input_ids == [2, 5, 6, 7, 8, 3]
    assert features.segment_ids == [0] * 6
    regression = convert_single_example(InputExample("x", A, B, 3.25), None, 20, wordpiece)
    assert regression.label_id == 3.25


def test_processor_to_features_with_sentencepiece(glue_dir, text_assets):
    """SentencePiece mode: processor lower-cases, the batch path equals one-by-one tokenize."""
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    processor = GlueProcessor(get_task("mrpc"), use_spm=True, do_lower_case=True)
    examples = processor.get_train_examples(glue_dir)
    features = convert_examples_to_features(examples, processor.get_labels(), 40, tokenizer)
    for example, feature in zip(examples, features):
        raw_a, raw_b = example.text_a, example.text_b
        assert raw_a == preprocess_text(raw_a, lower=True)
        one = convert_single_example(example, {"0": 0, "1": 1}, 40, tokenizer)
        assert feature == one
        a, b = tokenizer.tokenize(raw_a), tokenizer.tokenize(raw_b)
        truncate_seq_pair(a, b, 37)
        expected = tokenizer.convert_tokens_to_ids(["[CLS]", *a, "[SEP]", *b, "[SEP]"])
        assert feature.input_ids[:len(expected)] == expected
        assert feature.segment_ids[:len(expected)] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
        assert feature.input_ids[0] == tokenizer.cls_id == 2


@pytest.mark.parametrize("text_b", ["", "   ", "\u0301"])
def test_second_sentence_without_tokens_gives_the_single_sentence_layout(wordpiece, text_b):
    """The original's `if tokens_b:`: `[CLS] a [SEP]`, cut to max_seq_length − 2 (faithfulness §8.3),
    not `[CLS] a [SEP] [SEP]` with pair truncation."""
    assert wordpiece.tokenize(text_b) == []
    example = InputExample("x", A, text_b, "1")
    features = convert_single_example(example, {"0": 0, "1": 1}, 6, wordpiece)
    assert features.input_ids == [2, 5, 6, 7, 8, 3]  # pair truncation would give 2 5 6 7 3 3
    assert features.segment_ids == [0] * 6 and features.input_mask == [1] * 6
    padded = convert_single_example(example, {"0": 0, "1": 1}, 12, wordpiece)
    assert padded.input_ids == [2, 5, 6, 7, 8, 5, 9, 14, 3, 0, 0, 0]
    assert padded.segment_ids == [0] * 12 and padded.input_mask == [1] * 9 + [0] * 3
    # The batched path agrees, next to a normal pair.
    pair = InputExample("y", A, B, "0")
    batched = convert_examples_to_features([example, pair], ["0", "1"], 12, wordpiece)
    assert batched[0] == padded
    assert batched[1] == convert_single_example(pair, {"0": 0, "1": 1}, 12, wordpiece)
