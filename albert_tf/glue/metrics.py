"""GLUE's metrics, written from their definitions (numpy, corpus level), and the per-task set.

* accuracy — fraction of exact matches.
* F1 (MRPC, QQP) — of the positive class 1: 2·TP / (2·TP + FP + FN); 0 when that is 0/0.
* Matthews correlation (CoLA) — from the K×K confusion matrix C (K = 2 gives the binary
  (TP·TN − FP·FN)/√(…) of the original's streaming counts):
  (c·s − Σ_k p_k t_k) / √((s² − Σ_k p_k²)(s² − Σ_k t_k²)), c = trace, s = total,
  t/p = true / predicted class counts; 0 when the denominator is 0.
* Pearson (STS-B) — covariance over the product of standard deviations (float64).
* Spearman (STS-B) — Pearson of the ranks, ties given their average rank.

`glue_metrics` gives the original's keys (faithfulness §8.5: `eval_accuracy`, `eval_loss`,
`matthew_corr`, `pearson`, `MSE`) plus GLUE's other official numbers (`f1` for MRPC/QQP,
`spearman` for STS-B). The classification loss is `finetuning.metrics.cross_entropy`,
shared with RACE.
"""

from __future__ import annotations

import numpy as np

from albert_tf.finetuning.metrics import cross_entropy
from albert_tf.glue.examples import GlueTask

F1_TASKS = ("mrpc", "qqp")


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float(np.mean(labels == predictions)) if labels.size else float("nan")


def f1_score(labels: np.ndarray, predictions: np.ndarray, positive: int = 1) -> float:
    labels, predictions = np.asarray(labels) == positive, np.asarray(predictions) == positive
    tp = np.sum(labels & predictions)
    fp = np.sum(~labels & predictions)
    fn = np.sum(labels & ~predictions)
    denominator = 2 * tp + fp + fn
    return float(2 * tp / denominator) if denominator else 0.0


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """C[i, j] = number of examples of true class i predicted as class j."""
    labels, predictions = np.asarray(labels, np.int64), np.asarray(predictions, np.int64)
    k = int(max(labels.max(initial=0), predictions.max(initial=0))) + 1
    matrix = np.zeros((k, k), np.int64)
    np.add.at(matrix, (labels, predictions), 1)
    return matrix


def matthews_corrcoef(labels: np.ndarray, predictions: np.ndarray) -> float:
    matrix = confusion_matrix(labels, predictions).astype(np.float64)
    true_counts, predicted_counts = matrix.sum(axis=1), matrix.sum(axis=0)
    correct, total = np.trace(matrix), matrix.sum()
    numerator = correct * total - predicted_counts @ true_counts
    denominator = np.sqrt((total**2 - predicted_counts @ predicted_counts)
                          * (total**2 - true_counts @ true_counts))
    return float(numerator / denominator) if denominator else 0.0


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """NaN when either side is constant (the correlation is undefined)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denominator) if denominator else float("nan")


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    values = np.asarray(values)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start index of each run of equal values in sorted order.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    run_ranks = (starts + 1 + ends) / 2.0  # mean of ranks starts+1 … ends
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.repeat(run_ranks, ends - starts)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return pearson(average_ranks(x), average_ranks(y))


def per_example_loss(task: GlueTask, logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The training loss per example (faithfulness §8.4): cross-entropy, or squared error for STS-B."""
    if task.is_regression:
        return (np.asarray(logits, np.float64).reshape(-1) - np.asarray(labels, np.float64)) ** 2
    return cross_entropy(logits, labels)


def predictions_from_logits(task: GlueTask, logits: np.ndarray) -> np.ndarray:
    """argmax class ids, or the single regression output."""
    logits = np.asarray(logits)
    return logits.reshape(-1) if task.is_regression else np.argmax(logits, axis=-1)


def glue_metrics(task: GlueTask, logits: np.ndarray, labels: np.ndarray,
                 weights: np.ndarray | None = None) -> dict[str, float]:
    """The task's eval metrics over the examples with weight 1 (real, not padding)."""
    logits, labels = np.asarray(logits), np.asarray(labels)
    if weights is not None:
        keep = np.asarray(weights) > 0
        logits, labels = logits[keep], labels[keep]
    predictions = predictions_from_logits(task, logits)
    losses = per_example_loss(task, logits, labels)
    results = {"eval_loss": float(losses.mean()) if losses.size else float("nan")}
    if task.is_regression:
        results["pearson"] = pearson(predictions, labels)
        results["spearman"] = spearman(predictions, labels)
        results["MSE"] = results["eval_loss"]
        return results
    results["eval_accuracy"] = accuracy(labels, predictions)
    if task.name == "cola":
        results["matthew_corr"] = matthews_corrcoef(labels, predictions)
    if task.name in F1_TASKS:
        results["f1"] = f1_score(labels, predictions)
    return results
