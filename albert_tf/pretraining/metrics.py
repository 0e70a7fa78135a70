"""Pretraining's evaluation metrics: the original's names and the side-car's selection metric.

The original's run_pretraining writes masked_lm_accuracy, masked_lm_loss,
sentence_order_accuracy and sentence_order_loss to eval_results.txt (faithfulness §4.4);
its side-car evaluator keeps the checkpoint with the best masked_lm_accuracy (§6.4). The
streaming Keras metrics are made here; `modeling.PretrainingObjective` updates them.
"""

from __future__ import annotations

import keras

METRIC_NAMES = ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy",
                "sentence_order_loss")
# The selection metric of side-car evaluation (faithfulness §6.4).
BEST_METRIC = "masked_lm_accuracy"


def create_metrics(sentence_prediction: bool = True) -> dict[str, keras.metrics.Metric]:
    """The metrics of faithfulness §4.4, by name; without a sentence task (ours,
    `--sentence_prediction=none`) the masked LM's alone."""
    metrics: dict[str, keras.metrics.Metric] = {
        "masked_lm_accuracy": keras.metrics.SparseCategoricalAccuracy("masked_lm_accuracy"),
        "masked_lm_loss": keras.metrics.Mean("masked_lm_loss"),
    }
    if sentence_prediction:
        metrics["sentence_order_accuracy"] = keras.metrics.SparseCategoricalAccuracy(
            "sentence_order_accuracy")
        metrics["sentence_order_loss"] = keras.metrics.Mean("sentence_order_loss")
    return metrics
