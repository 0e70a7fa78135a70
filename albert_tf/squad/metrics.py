"""SQuAD metrics, equal in definition to the official v1.1 and v2.0 evaluation scripts.

Both normalise answers the same way: lower-case, drop ASCII punctuation, replace the
articles a / an / the (whole words) by a space, collapse whitespace. EM is equality of
normalised strings, F1 the harmonic mean of token precision and recall (tokens counted
with multiplicity); each question takes the maximum over its gold answers.

* v1.1 (`evaluate_v1`): {"exact_match", "f1"} in percent over all questions of the file;
  a question without a prediction scores 0. F1 is 0 when nothing is shared.
* v2.0 (`evaluate_v2`): gold answers that normalise to "" are dropped and a question with
  none left has the gold answer ""; F1 of an empty side is 1 if both are empty else 0;
  questions without a prediction are left out. With null scores (`na_probs`), a
  question whose null score exceeds `na_prob_thresh` counts as predicting no answer;
  the result has exact / f1 / total, the HasAns_ and NoAns_ breakdown and the best
  threshold search (best_exact, best_exact_thresh, best_f1, best_f1_thresh).
"""

from __future__ import annotations

import collections
import re
import string
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from absl import logging

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (the official normalisation)."""
    text = text.lower()
    text = "".join(c for c in text if c not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _token_f1(prediction_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(data: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for article in data:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


# ----- v1.1 -----

def exact_match_v1(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def f1_v1(prediction: str, gold: str) -> float:
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def _max_over(metric: Callable[[str, str], float], prediction: str, golds: Sequence[str]) -> float:
    return max(metric(prediction, gold) for gold in golds)


def evaluate_v1(data: Sequence[Mapping[str, Any]], predictions: Mapping[str, str]) -> dict[str, float]:
    """{"exact_match", "f1"} in percent; `data` is the file's "data" list."""
    exact = f1 = 0.0
    total = missing = 0
    for qa in _questions(data):
        total += 1
        if qa["id"] not in predictions:
            missing += 1
            continue
        golds = [answer["text"] for answer in qa["answers"]]
        exact += _max_over(exact_match_v1, predictions[qa["id"]], golds)
        f1 += _max_over(f1_v1, predictions[qa["id"]], golds)
    if missing:
        logging.warning("%d question(s) have no prediction; they score 0", missing)
    return {"exact_match": 100.0 * exact / total if total else 0.0,
            "f1": 100.0 * f1 / total if total else 0.0}


# ----- v2.0 -----

def answer_tokens(text: str) -> list[str]:
    """Normalised tokens; [] for an empty answer."""
    return normalize_answer(text).split() if text else []


def exact_v2(gold: str, prediction: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1_v2(gold: str, prediction: str) -> float:
    gold_tokens, prediction_tokens = answer_tokens(gold), answer_tokens(prediction)
    if not gold_tokens or not prediction_tokens:
        return float(gold_tokens == prediction_tokens)
    return _token_f1(prediction_tokens, gold_tokens)


def has_answer_map(data: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """qas_id → whether the question has gold answers."""
    return {qa["id"]: bool(qa["answers"]) for qa in _questions(data)}


def raw_scores_v2(data: Sequence[Mapping[str, Any]], predictions: Mapping[str, str]
                  ) -> tuple[dict[str, int], dict[str, float]]:
    """Per question EM and F1 (max over gold answers), questions with a prediction only."""
    exact: dict[str, int] = {}
    f1: dict[str, float] = {}
    missing = 0
    for qa in _questions(data):
        qas_id = qa["id"]
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        if qas_id not in predictions:
            missing += 1
            continue
        prediction = predictions[qas_id]
        exact[qas_id] = max(exact_v2(g, prediction) for g in golds)
        f1[qas_id] = max(f1_v2(g, prediction) for g in golds)
    if missing:
        logging.warning("%d question(s) have no prediction; they are left out", missing)
    return exact, f1


def apply_no_answer_threshold(scores: Mapping[str, float], na_probs: Mapping[str, float],
                              has_answer: Mapping[str, bool], threshold: float) -> dict[str, float]:
    """Scores with every question whose null score > threshold counted as "no answer"."""
    return {qas_id: (float(not has_answer[qas_id]) if na_probs[qas_id] > threshold else score)
            for qas_id, score in scores.items()}


def summary(exact: Mapping[str, float], f1: Mapping[str, float],
            qas_ids: Sequence[str] | None = None) -> dict[str, float]:
    """{"exact", "f1", "total"}: percentages over `qas_ids` (default: all scored)."""
    ids = list(exact) if qas_ids is None else list(qas_ids)
    total = len(ids)
    if not total:
        return {"exact": 0.0, "f1": 0.0, "total": 0}
    return {"exact": 100.0 * sum(exact[i] for i in ids) / total,
            "f1": 100.0 * sum(f1[i] for i in ids) / total, "total": total}


def best_threshold(predictions: Mapping[str, str], scores: Mapping[str, float],
                   na_probs: Mapping[str, float], has_answer: Mapping[str, bool]
                   ) -> tuple[float, float]:
    """(best score in percent, threshold): the official search.

    Start from "answer nothing" (one point per unanswerable question); walk questions
    by ascending null score, answering each in turn: + its score if it has an answer,
    − 1 if it has none but the prediction is non-empty. The threshold is the null score
    where the running total peaked (0.0 if it never rose).
    """
    current = best = sum(1 for answerable in has_answer.values() if not answerable)
    threshold = 0.0
    for qas_id in sorted(na_probs, key=lambda i: na_probs[i]):
        if qas_id not in scores:
            continue
        if has_answer[qas_id]:
            current += scores[qas_id]
        elif predictions[qas_id]:
            current -= 1
        if current > best:
            best, threshold = current, na_probs[qas_id]
    return 100.0 * best / len(scores) if scores else 0.0, threshold


def evaluate_v2(data: Sequence[Mapping[str, Any]], predictions: Mapping[str, str],
                na_probs: Mapping[str, float] | None = None, na_prob_thresh: float = 1.0
                ) -> dict[str, float]:
    """The official v2.0 result dict (see module doc); `na_probs` are the null scores
    (null_odds.json), all 0.0 and no threshold search when None."""
    has_answer = has_answer_map(data)
    exact_raw, f1_raw = raw_scores_v2(data, predictions)
    probs = na_probs if na_probs is not None else {k: 0.0 for k in predictions}
    exact = apply_no_answer_threshold(exact_raw, probs, has_answer, na_prob_thresh)
    f1 = apply_no_answer_threshold(f1_raw, probs, has_answer, na_prob_thresh)
    result: dict[str, float] = summary(exact, f1)
    scored = [i for i in has_answer if i in exact]
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        ids = [i for i in scored if has_answer[i] == wanted]
        if ids:
            for key, value in summary(exact, f1, ids).items():
                result[f"{prefix}_{key}"] = value
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = best_threshold(
            predictions, exact_raw, na_probs, has_answer)
        result["best_f1"], result["best_f1_thresh"] = best_threshold(
            predictions, f1_raw, na_probs, has_answer)
    return result
