"""Post-processing (faithfulness §9.7): oracle outputs give back the gold answers; candidate rules; files."""

import json

import numpy as np
import pytest

from albert_tf.squad.examples import read_squad_examples
from albert_tf.squad.features import FeatureBuilder
from albert_tf.squad.postprocess import (NbestEntry, SquadPredictions, postprocess,
                                         write_prediction_files)
from tests.squad.conftest import fixture_path

SEQ, STRIDE, QUERY = 128, 32, 24


def _build(tokenizer, name, v2):
    examples, _ = read_squad_examples(fixture_path(name), False, v2)
    builder = FeatureBuilder(tokenizer, max_seq_length=SEQ, doc_stride=STRIDE, max_query_length=QUERY)
    features = builder.build(examples, with_labels=True)  # labels: first gold answer
    assert max(f.doc_span_index for f in features) >= 5  # long contexts: many windows
    return examples, features


def _oracle_log_probs(position, p_mask):
    """Log-probabilities with (almost) all mass on `position`; masked positions at −1e30."""
    logits = np.where(p_mask == 1, -1e30, 0.0)
    logits[position] = 30.0
    return logits - np.logaddexp.reduce(logits)


def _oracle_v1(feature):
    start = np.full(SEQ, -10.0)
    end = np.full(SEQ, -10.0)
    start[feature.start_position] = end[feature.end_position] = 10.0  # [CLS] when no answer
    return {"start_logits": start, "end_logits": end}


def _oracle_v2(feature, start_n_top=5, end_n_top=5):
    """The v2 head's beam outputs for oracle start/end distributions."""
    start_lp = _oracle_log_probs(feature.start_position, feature.p_mask)
    end_lp = _oracle_log_probs(feature.end_position, feature.p_mask)
    start_index = np.argsort(-start_lp, kind="stable")[:start_n_top]
    end_index = np.argsort(-end_lp, kind="stable")[:end_n_top]
    return {"start_top_log_probs": start_lp[start_index], "start_top_index": start_index,
            "end_top_log_probs": np.tile(end_lp[end_index], start_n_top),
            "end_top_index": np.tile(end_index, start_n_top),
            "cls_logits": np.float32(10.0 if feature.is_impossible else -10.0)}


def test_oracle_v1_logits_give_back_the_gold_answers(tokenizer):
    examples, features = _build(tokenizer, "dev-v1.1.json", v2=False)
    results = {f.unique_id: _oracle_v1(f) for f in features}
    predictions = postprocess(examples, features, results, False).best_texts()
    right = sum(predictions[e.qas_id] == e.answers[0].text for e in examples)
    assert len(examples) == 45 and right / len(examples) >= 0.99


def test_oracle_v2_gives_gold_answers_and_empty_for_unanswerable(tokenizer):
    examples, features = _build(tokenizer, "dev-v2.0.json", v2=True)
    results = {f.unique_id: _oracle_v2(f) for f in features}
    squad = postprocess(examples, features, results, True)
    predictions = squad.predictions(threshold=0.0)
    answerable = [e for e in examples if not e.is_impossible]
    unanswerable = [e for e in examples if e.is_impossible]
    right = sum(predictions[e.qas_id] == e.answers[0].text for e in answerable)
    assert right / len(answerable) >= 0.99
    assert unanswerable and all(predictions[e.qas_id] == "" for e in unanswerable)
    # The null score is the minimum over windows: −10 wherever one window holds the answer.
    assert {squad.null_odds[e.qas_id] for e in answerable} == {-10.0}
    assert {squad.null_odds[e.qas_id] for e in unanswerable} == {10.0}


@pytest.fixture
def one_feature(tokenizer):
    examples, features = _build(tokenizer, "dev-v1.1.json", v2=False)
    feature = next(f for f in features if f.example_index == 1)  # one window, short context
    return examples[:2], [feature]


def test_v1_candidate_rules_and_fallback(one_feature):
    examples, (feature,) = one_feature
    o = feature.doc_offset
    start, end = np.full(SEQ, -5.0), np.full(SEQ, -5.0)
    start[o + 2], end[o + 1] = 9.0, 8.0  # best pair has end < start: rejected
    end[o + 4] = 7.0
    start[1] = 20.0  # a query position is never a window piece (not max context)
    squad = postprocess(examples, [feature], {feature.unique_id: {"start_logits": start, "end_logits": end}},
                        False, n_best_size=3, max_answer_length=30)
    best = squad.nbest[examples[1].qas_id][0]
    assert (best.start_log_prob, best.end_log_prob) == (9.0, 7.0)
    assert best.text == examples[1].context_text[feature.char_start[2]:feature.char_end[4] + 1].strip()
    assert sum(e.probability for e in squad.nbest[examples[1].qas_id]) == pytest.approx(1.0)
    texts = [e.text for e in squad.nbest[examples[1].qas_id]]
    assert len(texts) == len(set(texts))  # deduplicated by text
    # Too long for max_answer_length → nothing left → "empty" with scores 0 (Q22).
    squad = postprocess(examples, [feature], {feature.unique_id: {"start_logits": start, "end_logits": end}},
                        False, n_best_size=1, max_answer_length=1)
    assert squad.nbest[examples[1].qas_id] == [NbestEntry("empty", 0.0, 0.0, 1.0)]
    assert squad.nbest[examples[0].qas_id][0].text == "empty"  # example without features


def test_v2_never_answers_with_cls_and_falls_back_to_empty(one_feature):
    examples, (feature,) = one_feature
    result = {"start_top_log_probs": np.array([0.0]), "start_top_index": np.array([0]),
              "end_top_log_probs": np.array([0.0]), "end_top_index": np.array([0]),
              "cls_logits": np.float32(-3.0)}
    squad = postprocess(examples, [feature], {feature.unique_id: result}, True)
    assert squad.nbest[examples[1].qas_id] == [NbestEntry("", -1e6, -1e6, 1.0)]
    assert squad.null_odds == {examples[0].qas_id: 1e6, examples[1].qas_id: -3.0}


def test_null_threshold_rules_differ_only_at_the_threshold():
    squad = SquadPredictions({"a": [NbestEntry("x", 0, 0)], "b": [NbestEntry("y", 0, 0)]},
                             {"a": 0.5, "b": 0.7})
    assert squad.predictions() == {"a": "x", "b": "y"}
    assert squad.predictions(0.7) == {"a": "x", "b": ""}  # Q24: null < threshold answers
    assert squad.predictions(0.7, rule="inclusive") == {"a": "x", "b": "y"}


def test_output_files_have_the_official_formats(tmp_path):
    squad = SquadPredictions({"a": [NbestEntry("x", -1.0, -2.0, 0.75), NbestEntry("z", -3.0, -2.0, 0.25)]},
                             {"a": 0.5})
    paths = write_prediction_files(str(tmp_path), {"a": "x"}, squad)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"]
    assert json.loads(open(paths["predictions"]).read()) == {"a": "x"}
    assert json.loads(open(paths["nbest"]).read())["a"][0] == {
        "text": "x", "probability": 0.75, "start_log_prob": -1.0, "end_log_prob": -2.0}
    assert json.loads(open(paths["null_odds"]).read()) == {"a": 0.5}
    assert open(paths["predictions"]).read() == '{\n    "a": "x"\n}\n'  # indent 4
