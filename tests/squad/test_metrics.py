"""SQuAD metrics on hand-computed cases (official v1.1 / v2.0 definitions)."""

import pytest

from albert_tf.squad.metrics import (best_threshold, evaluate_v1, evaluate_v2, exact_v2, f1_v1,
                                      f1_v2, normalize_answer)


def _data(*qas):
    """A one-paragraph SQuAD "data" list from (id, [gold texts]) pairs."""
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": [
        {"id": i, "question": "q", "answers": [{"text": g, "answer_start": 0} for g in golds]}
        for i, golds in qas]}]}]


@pytest.mark.parametrize("text, expected", [
    ("The  Quick, brown fox!", "quick brown fox"),
    ("An apple a day", "apple day"),
    ("theater of the absurd", "theater of absurd"),  # articles only as whole words
    ("A.B.C. (1,200) \u2014 ok", "abc 1200 \u2014 ok"),  # ASCII punctuation only
    ("  ", ""),
])
def test_normalization(text, expected):
    assert normalize_answer(text) == expected


def test_f1_counts_tokens_with_multiplicity():
    assert f1_v1("Eiffel", "the Eiffel Tower") == pytest.approx(2 / 3)  # P 1, R 1/2
    assert f1_v1("the the cat cat cat", "cat cat") == pytest.approx(0.8)  # P 2/3, R 1
    assert f1_v1("dog", "cat") == 0.0


def test_v1_takes_the_best_gold_answer_and_scores_missing_predictions_zero():
    data = _data(("q1", ["the Eiffel Tower", "Eiffel Tower"]),
                 ("q2", ["Paris", "Paris, France"]),
                 ("q3", ["1889"]))
    predictions = {"q1": "Eiffel tower.", "q2": "in Paris, France"}  # q3 unanswered
    # q1: EM 1. q2: "in paris france" vs "paris france": P 2/3, R 1 → F1 0.8 (vs "paris": 0.5).
    result = evaluate_v1(data, predictions)
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * 1.8 / 3)


def test_v2_empty_answers():
    assert exact_v2("", "") == 1 and f1_v2("", "") == 1.0
    assert exact_v2("", "a") == 1 and f1_v2("", "the") == 1.0  # normalise to empty
    assert f1_v2("", "Paris") == 0.0 and f1_v2("Paris", "") == 0.0


def test_v2_gold_answers_normalising_to_empty_become_the_no_answer():
    data = _data(("q", ["The", "a"]))  # nothing left after normalisation → gold ""
    assert evaluate_v2(data, {"q": ""})["exact"] == 100.0
    assert evaluate_v2(data, {"q": "Paris"})["f1"] == 0.0


def _v2_case():
    # a, c, e answerable and answered right; b, d unanswerable but answered.
    data = _data(("a", ["Paris"]), ("b", []), ("c", ["1889"]), ("d", []), ("e", ["iron"]))
    predictions = {"a": "Paris", "b": "foo", "c": "1889", "d": "bar", "e": "iron"}
    null_scores = {"a": -3.0, "b": -1.0, "c": 0.5, "e": 0.7, "d": 2.0}
    return data, predictions, null_scores


def test_v2_threshold_search_walks_questions_by_null_score():
    data, predictions, null_scores = _v2_case()
    has_answer = {"a": True, "b": False, "c": True, "d": False, "e": True}
    scores = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0, "e": 1.0}
    # Start 2 (unanswerable count); a +1 → 3 (thr −3); b −1 → 2; c +1 → 3; e +1 → 4 (thr 0.7);
    # d −1 → 3. Best 4 of 5.
    assert best_threshold(predictions, scores, null_scores, has_answer) == (80.0, 0.7)
    # Never improving keeps threshold 0.0.
    assert best_threshold({"b": "x"}, {"b": 0.0}, {"b": -5.0}, {"b": False}) == (100.0, 0.0)


def test_v2_result_dict_with_breakdown_and_na_prob_thresh():
    data, predictions, null_scores = _v2_case()
    result = evaluate_v2(data, predictions, null_scores, na_prob_thresh=1.0)
    # d's null score 2.0 > 1.0: scored as predicting no answer → correct. b stays wrong.
    assert result["exact"] == pytest.approx(80.0) and result["f1"] == pytest.approx(80.0)
    assert result["total"] == 5
    assert (result["HasAns_exact"], result["HasAns_total"]) == (100.0, 3)
    assert (result["NoAns_exact"], result["NoAns_total"]) == (50.0, 2)
    assert (result["best_f1"], result["best_f1_thresh"]) == (80.0, 0.7)
    assert (result["best_exact"], result["best_exact_thresh"]) == (80.0, 0.7)
    # Without null scores: no threshold search, everything counts as answered.
    plain = evaluate_v2(data, predictions)
    assert plain["exact"] == pytest.approx(60.0) and "best_f1" not in plain


def test_v2_leaves_out_questions_without_prediction():
    data = _data(("a", ["Paris"]), ("b", []))
    result = evaluate_v2(data, {"a": "Paris"})
    assert result["total"] == 1 and result["exact"] == 100.0 and "NoAns_total" not in result
