"""RACE metrics: accuracy overall, on middle and on high (faithfulness §10.4), and the eval loss.

The original reports `eval_accuracy` and `eval_loss` and gets the per-level accuracies from
separate `--middle_only` / `--high_only` runs; one run here reports all three
(`eval_accuracy_middle`, `eval_accuracy_high`, for the levels present). Examples without a
label (an unlabelled test set) are left out; with none labelled there are no metrics.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from albert_tf.finetuning.metrics import cross_entropy, mean_of_batch_means
from albert_tf.race.examples import LEVELS, RaceExample


def labelled(examples: Sequence[RaceExample]) -> np.ndarray:
    """Boolean [N]: which examples have a label."""
    return np.array([e.label is not None for e in examples], bool)


def race_metrics(logits: np.ndarray, examples: Sequence[RaceExample],
                 batch_size: int | None = None) -> dict[str, float]:
    """eval_accuracy, eval_loss, eval_accuracy_<level> over the labelled examples; plus
    `loss` (the Estimator's mean of batch means) when `batch_size` is given."""
    logits = np.asarray(logits)
    if len(logits) != len(examples):
        raise ValueError(f"{len(logits)} logits for {len(examples)} examples")
    keep = labelled(examples)
    if not keep.any():
        return {}
    labels = np.array([e.label for e, k in zip(examples, keep) if k], np.int64)
    kept_logits = logits[keep]
    correct = np.argmax(kept_logits, axis=-1) == labels
    losses = cross_entropy(kept_logits, labels)
    results = {"eval_accuracy": float(correct.mean()), "eval_loss": float(losses.mean())}
    levels = np.array([e.level for e, k in zip(examples, keep) if k])
    for level in LEVELS:
        at_level = levels == level
        if at_level.any():
            results[f"eval_accuracy_{level}"] = float(correct[at_level].mean())
    if batch_size:
        results["loss"] = mean_of_batch_means(losses, batch_size)
    return results
