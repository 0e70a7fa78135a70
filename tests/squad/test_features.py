"""Windows, sequence layout, p_mask and labels (faithfulness §9.4); the cache is in test_feature_cache."""

import numpy as np
import pytest

from albert_tf.squad.examples import Answer, SkipReport, SquadExample, read_squad_examples
from albert_tf.squad.features import (FIRST_UNIQUE_ID, FeatureBuilder, doc_windows,
                                      max_context_flags)
from tests.squad.conftest import fixture_path


def test_windows_advance_by_the_stride_until_the_end():
    assert doc_windows(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert doc_windows(10, 4, 5) == [(0, 4), (4, 4), (8, 2)]
    assert doc_windows(3, 4, 2) == [(0, 3)]


def test_max_context_goes_to_the_most_centred_window_first_on_ties():
    windows = [(0, 4), (3, 4), (6, 4)]
    # Piece 3: score 0.04 in windows 0 and 1 → window 0. Piece 6: 0.04 in 1 and 2 → window 1.
    assert max_context_flags(windows, 0) == [True, True, True, True]
    assert max_context_flags(windows, 1) == [False, True, True, True]
    assert max_context_flags(windows, 2) == [False, True, True, True]


def test_sequence_layout_segment_ids_and_p_mask(tokenizer):
    context = "The café is in Paris and it is old."
    example = SquadExample("q1", "Where is the café?", context, [Answer("Paris", 15)])
    builder = FeatureBuilder(tokenizer, max_seq_length=48, doc_stride=8, max_query_length=6)
    (feature,) = builder.build([example], with_labels=True)
    query = tokenizer.tokenize("where is the cafe?")[:6]
    n = len(feature.tokens)
    assert feature.tokens[:len(query) + 2] == ["[CLS]", *query, "[SEP]"] and feature.tokens[-1] == "[SEP]"
    assert feature.doc_offset == len(query) + 2 and feature.unique_id == FIRST_UNIQUE_ID
    assert list(feature.input_ids[:n]) == tokenizer.convert_tokens_to_ids(feature.tokens)
    assert not feature.input_ids[n:].any() and feature.input_mask.sum() == n
    assert list(feature.segment_ids) == [0] * feature.doc_offset + [1] * (n - feature.doc_offset) + [0] * (48 - n)
    expected_p_mask = [0] + [1] * (len(query) + 1) + [0] * feature.window_length + [1] * (48 - n + 1)
    assert list(feature.p_mask) == expected_p_mask
    first, last = feature.start_position - feature.doc_offset, feature.end_position - feature.doc_offset
    assert not feature.is_impossible
    assert context[feature.char_start[first]:feature.char_end[last] + 1].strip() == "Paris"


@pytest.mark.parametrize("name, v2", [("train-v1.1.json", False), ("train-v2.0.json", True)])
def test_labels_across_windows_point_at_the_answer(tokenizer, name, v2):
    examples, _ = read_squad_examples(fixture_path(name), True, v2)
    builder = FeatureBuilder(tokenizer, max_seq_length=64, doc_stride=24, max_query_length=16)
    features = builder.build(examples, with_labels=True)
    assert [f.unique_id for f in features] == list(range(FIRST_UNIQUE_ID, FIRST_UNIQUE_ID + len(features)))
    windows_per_example = np.bincount([f.example_index for f in features])
    assert windows_per_example.max() >= 8  # long contexts span many windows
    labelled = set()
    for feature in features:
        example = examples[feature.example_index]
        if feature.is_impossible:
            assert (feature.start_position, feature.end_position) == (0, 0)
            continue
        assert not example.is_impossible
        first = feature.start_position - feature.doc_offset
        last = feature.end_position - feature.doc_offset
        assert 0 <= first <= last < feature.window_length
        text = example.context_text[feature.char_start[first]:feature.char_end[last] + 1].strip()
        assert text == example.answer_text
        labelled.add(feature.example_index)
    # Every answerable question is labelled in at least one window; windows without the
    # answer (and every window of an unanswerable question) point at [CLS].
    assert labelled == {i for i, e in enumerate(examples) if not e.is_impossible}


class _UnalignableTokenizer:
    """Returns pieces that have nothing to do with the text."""

    def tokenize(self, text):
        return ["▁zz", "qq"] if "unalignable" in text else ["▁ok"]

    def convert_tokens_to_ids(self, tokens):
        return [5] * len(tokens)


def test_unalignable_examples_are_counted_skips():
    examples = [SquadExample("bad", "q", "an unalignable context of some length", [], True, 1),
                SquadExample("good", "q", "ok", [], True, 2)]
    skips = SkipReport()
    features = FeatureBuilder(_UnalignableTokenizer(), 16, 4, 4).build(examples, False, skips)
    assert [f.qas_id for f in features] == ["good"]
    assert list(skips.ids.values()) == [["bad"]]

