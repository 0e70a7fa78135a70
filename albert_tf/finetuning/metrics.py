"""Eval numbers from gathered outputs (numpy, no TensorFlow): the classification loss twins.

`cross_entropy` is the per-example training loss of `objective.classification_objective`
(faithfulness §8.4, §10.4) in float64; `mean_of_batch_means` is the Estimator's eval `loss` (the mean
over eval batches of each batch's mean loss), which the original reports beside `eval_loss`.
"""

from __future__ import annotations

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, float64."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """[N] −log softmax(logits)[label] (float64)."""
    labels = np.asarray(labels, np.int64)
    return -log_softmax(logits)[np.arange(len(labels)), labels]


def mean_of_batch_means(losses: np.ndarray, batch_size: int) -> float:
    """The Estimator's eval `loss`: each batch's mean loss, averaged over batches (the last,
    short batch counts as one); NaN for no examples."""
    losses = np.asarray(losses, np.float64)
    if not losses.size:
        return float("nan")
    batches = np.split(losses, range(batch_size, len(losses), batch_size))
    return float(np.mean([batch.mean() for batch in batches]))
