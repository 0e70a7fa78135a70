"""Softmax cross-entropy over per-example logits: the objective of GLUE classification and RACE.

Loss (faithfulness §8.4, §10.4): mean over real examples (`is_real_example` = 1) of
−log softmax(logits)[label], logits in float32; the training log also reports accuracy.
Its numpy twin for gathered eval outputs is `albert_tf.finetuning.metrics`.

Example:
    >>> objective = classification_objective()
    >>> trainer = Trainer(model_fn, objective, loop_config, optimizer_fn)
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.training.objective import MeanLossObjective


def sparse_cross_entropy(labels, outputs) -> tf.Tensor:
    """[B] float32 −log softmax(outputs["logits"])[labels["label_ids"]]."""
    logits = tf.cast(outputs["logits"], tf.float32)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels["label_ids"], tf.int32), logits=logits)


def classification_objective(weight_key: str | None = "is_real_example") -> MeanLossObjective:
    """Mean cross-entropy over weighted examples, plus a streaming `accuracy` to log."""

    def metrics_fn():
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy("accuracy")}

    def update_fn(metrics, labels, outputs):
        weights = labels[weight_key] if weight_key else None
        metrics["accuracy"].update_state(labels["label_ids"], outputs["logits"],
                                         sample_weight=weights)

    return MeanLossObjective(sparse_cross_entropy, metrics_fn, update_fn,
                             example_weight_key=weight_key)
