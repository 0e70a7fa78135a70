"""Raw model outputs → n-best answers, predictions and the output files (faithfulness §9.7).

Per example, candidates (start, end) from every window are kept when both ends lie in
the window, the window owns the start piece (`token_is_max_context`), end ≥ start and
the span has at most `max_answer_length` pieces (v2 also needs start ≥ doc_offset, so
[CLS] never becomes a text answer: Q27). They are ranked by start + end score, deduped
by their text (raw context between the pieces' characters, stripped) and the best
`n_best_size` kept, with softmax probabilities over the kept sums.

v1 scores are raw logits and the empty fallback is "empty" (Q22, kept); v2 scores are
log-probabilities, the fallback is "" and the null score of an example is the minimum
`cls_logits` over its windows (Q27). The v2 answer is "" unless score_null < threshold
(Q24 kept; `rule="inclusive"` answers when score_null ≤ threshold, which is the rule
the threshold search assumes).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
from typing import Any, Mapping, Sequence

from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.squad.examples import SquadExample
from albert_tf.squad.features import SquadFeature

NULL_THRESHOLD_RULES = ("original", "inclusive")
V1_EMPTY_TEXT = "empty"
V2_EMPTY_SCORE = -1e6
NO_FEATURE_NULL_SCORE = 1e6  # an example without features (alignment skip, Q26) is "no answer"
RawResult = Mapping[str, Any]  # one feature's model outputs, output name → array
# What prediction gathers from the span labeler (faithfulness §9.5–9.6 "predict outputs"):
# v1 the raw start/end logits (the original names them start_log_prob / end_log_prob, Q22),
# v2 the beam (top starts, top ends per start) and cls_logits.
V1_OUTPUTS = ("start_logits", "end_logits")
V2_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
              "cls_logits")
PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"


@dataclasses.dataclass
class NbestEntry:
    """One distinct answer text with its scores (v1: logits; v2: log-probabilities)."""

    text: str
    start_log_prob: float
    end_log_prob: float
    probability: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "probability": self.probability,
                "start_log_prob": self.start_log_prob, "end_log_prob": self.end_log_prob}


@dataclasses.dataclass
class SquadPredictions:
    """Everything post-processing produces for a set of examples.

    Attributes:
      nbest: qas_id → n-best entries, best first.
      null_odds: qas_id → score_null (v2), or None (v1).
    """

    nbest: dict[str, list[NbestEntry]]
    null_odds: dict[str, float] | None = None

    def best_texts(self) -> dict[str, str]:
        """qas_id → the best non-null text (no threshold)."""
        return {qas_id: entries[0].text for qas_id, entries in self.nbest.items()}

    def predictions(self, threshold: float | None = None, rule: str = "original") -> dict[str, str]:
        """qas_id → final text: with a threshold (v2), "" unless score_null < threshold
        ("original", Q24) or ≤ threshold ("inclusive")."""
        if rule not in NULL_THRESHOLD_RULES:
            raise ValueError(f"rule must be one of {NULL_THRESHOLD_RULES}, got {rule!r}")
        best = self.best_texts()
        if threshold is None or self.null_odds is None:
            return best
        answer = (lambda s: s < threshold) if rule == "original" else (lambda s: s <= threshold)
        return {qas_id: text if answer(self.null_odds[qas_id]) else ""
                for qas_id, text in best.items()}


def _span_ok(feature: SquadFeature, start: int, end: int, max_answer_length: int,
             start_after_query: bool) -> bool:
    """The §9.7 candidate conditions, in sequence positions."""
    doc_offset, length = feature.doc_offset, feature.window_length
    if start_after_query and start < doc_offset:
        return False
    if start - doc_offset >= length or end - doc_offset >= length:
        return False
    if not feature.is_max_context(start):
        return False
    return start <= end and end - start + 1 <= max_answer_length


def _top_indices(scores: Sequence[float], n: int) -> list[int]:
    """Indices of the n largest scores, best first (stable for ties)."""
    return sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)[:n]


def v1_candidates(feature: SquadFeature, result: RawResult, n_best_size: int,
                  max_answer_length: int) -> list[tuple[int, int, float, float]]:
    """(start, end, start logit, end logit) of the top n × top n pairs that qualify."""
    start_logits = [float(x) for x in result["start_logits"]]
    end_logits = [float(x) for x in result["end_logits"]]
    out = []
    for start in _top_indices(start_logits, n_best_size):
        for end in _top_indices(end_logits, n_best_size):
            if _span_ok(feature, start, end, max_answer_length, start_after_query=False):
                out.append((start, end, start_logits[start], end_logits[end]))
    return out


def v2_candidates(feature: SquadFeature, result: RawResult, max_answer_length: int
                  ) -> list[tuple[int, int, float, float]]:
    """(start, end, start log-prob, end log-prob) of the beam pairs that qualify."""
    start_top = [float(x) for x in result["start_top_log_probs"]]
    start_index = [int(x) for x in result["start_top_index"]]
    end_top = [float(x) for x in result["end_top_log_probs"]]
    end_index = [int(x) for x in result["end_top_index"]]
    end_n_top = len(end_top) // max(len(start_top), 1)
    out = []
    for i, start in enumerate(start_index):
        for j in range(end_n_top):
            k = i * end_n_top + j
            end = end_index[k]
            if _span_ok(feature, start, end, max_answer_length, start_after_query=True):
                out.append((start, end, start_top[i], end_top[k]))
    return out


def softmax(scores: Sequence[float]) -> list[float]:
    """Softmax of a list of floats (max-subtracted); [] for []."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def example_nbest(example: SquadExample, features: Sequence[SquadFeature],
                  candidates: Sequence[Sequence[tuple[int, int, float, float]]],
                  n_best_size: int, empty: NbestEntry) -> list[NbestEntry]:
    """The example's n-best list from each feature's candidates (best first, distinct texts)."""
    ranked = [(s_score + e_score, f, start, end, s_score, e_score)
              for f, feature_candidates in enumerate(candidates)
              for start, end, s_score, e_score in feature_candidates]
    ranked.sort(key=lambda c: c[0], reverse=True)
    nbest: list[NbestEntry] = []
    seen: set[str] = set()
    for _, f, start, end, s_score, e_score in ranked:
        if len(nbest) >= n_best_size:
            break
        feature = features[f]
        first, last = start - feature.doc_offset, end - feature.doc_offset
        text = example.context_text[feature.char_start[first]:feature.char_end[last] + 1].strip()
        if text in seen:
            continue
        seen.add(text)
        nbest.append(NbestEntry(text, s_score, e_score))
    if not nbest:
        nbest.append(dataclasses.replace(empty))
    for entry, p in zip(nbest, softmax([e.start_log_prob + e.end_log_prob for e in nbest])):
        entry.probability = p
    return nbest


def results_by_unique_id(outputs: Mapping[str, Any], names: Sequence[str]
                         ) -> dict[int, RawResult]:
    """{unique_id: {name: row}} from gathered columns (`outputs["unique_ids"]` [N] and each
    name [N, …]), the form `postprocess` reads."""
    return {int(unique_id): {name: outputs[name][row] for name in names}
            for row, unique_id in enumerate(outputs["unique_ids"].tolist())}


def postprocess(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                results: Mapping[int, RawResult], version_2_with_negative: bool,
                n_best_size: int = 20, max_answer_length: int = 30) -> SquadPredictions:
    """n-best lists (and v2 null scores) for every example, in example order."""
    by_example: dict[int, list[SquadFeature]] = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    nbest: dict[str, list[NbestEntry]] = {}
    null_odds: dict[str, float] = {}
    for index, example in enumerate(examples):
        example_features = [f for f in by_example.get(index, []) if f.unique_id in results]
        if version_2_with_negative:
            candidates = [v2_candidates(f, results[f.unique_id], max_answer_length)
                          for f in example_features]
            empty = NbestEntry("", V2_EMPTY_SCORE, V2_EMPTY_SCORE)
            null_odds[example.qas_id] = min(
                (float(results[f.unique_id]["cls_logits"]) for f in example_features),
                default=NO_FEATURE_NULL_SCORE)
        else:
            candidates = [v1_candidates(f, results[f.unique_id], n_best_size, max_answer_length)
                          for f in example_features]
            empty = NbestEntry(V1_EMPTY_TEXT, 0.0, 0.0)
        nbest[example.qas_id] = example_nbest(example, example_features, candidates,
                                              n_best_size, empty)
    return SquadPredictions(nbest, null_odds if version_2_with_negative else None)


def write_json(path: str, value: Any) -> None:
    """JSON with indent 4 (the original's layout), written to a temporary name and renamed."""
    with atomic_file(path) as f:
        f.write(json.dumps(value, indent=4) + "\n")


def write_prediction_files(output_dir: str, predictions: Mapping[str, str],
                           squad_predictions: SquadPredictions) -> dict[str, str]:
    """predictions.json, nbest_predictions.json and (v2) null_odds.json in `output_dir`."""
    paths = {"predictions": os.path.join(output_dir, PREDICTIONS_FILE),
             "nbest": os.path.join(output_dir, NBEST_FILE)}
    write_json(paths["predictions"], dict(predictions))
    write_json(paths["nbest"], {qas_id: [e.to_json() for e in entries]
                                for qas_id, entries in squad_predictions.nbest.items()})
    if squad_predictions.null_odds is not None:
        paths["null_odds"] = os.path.join(output_dir, NULL_ODDS_FILE)
        write_json(paths["null_odds"], squad_predictions.null_odds)
    return paths
