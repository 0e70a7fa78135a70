"""What a task hands the training loop: a loss with global normalizers, and its metrics.

A task's loss is a sum of terms Σ_i ℓ_i / N, where N (a weight sum or an example count)
belongs to the *global* batch. The loop first sums each term's N over gradient-accumulation
micro-batches and replicas, then lets every micro-batch contribute Σ_local ℓ / N_global.
That makes k micro-batches of b, or R replicas of b, compute exactly the loss and gradient
of one batch of k·b or R·b on one device (faithfulness §4.1's MLM loss is Σwℓ/(Σw+1e-5) over the
whole batch, which a per-micro-batch mean would not reproduce).
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Mapping

import keras
import tensorflow as tf

Tensors = Mapping[str, tf.Tensor]


class Objective(abc.ABC):
    """Loss and metrics of one task; pretraining, GLUE, SQuAD and RACE each subclass it.

    The dataset yields `(features, labels)`: features are the model's inputs, labels are
    whatever `normalizers`, `loss` and `update_metrics` read.
    """

    @abc.abstractmethod
    def normalizers(self, labels: Tensors) -> dict[str, tf.Tensor]:
        """float32 scalars computed from labels only; the loop sums them globally."""

    @abc.abstractmethod
    def loss(self, labels: Tensors, outputs: Tensors, normalizers: Tensors) -> tf.Tensor:
        """This (micro-)batch's share of the global loss, using the global `normalizers`."""

    def create_metrics(self) -> dict[str, keras.metrics.Metric]:
        """Fresh metric objects, keyed by the name they are reported under."""
        return {}

    def update_metrics(self, metrics: Mapping[str, keras.metrics.Metric], labels: Tensors,
                       outputs: Tensors) -> None:
        """Adds one (micro-)batch to the streaming metrics."""


class MeanLossObjective(Objective):
    """Mean over the global batch of a per-example loss: the fine-tuning tasks' objective.

    Args:
        per_example_loss: (labels, outputs) → [B] float32 losses.
        metrics_fn: () → {name: keras.metrics.Metric}.
        update_fn: (metrics, labels, outputs) → None.
        example_weight_key: optional labels key of 0/1 example weights (e.g. padding
            examples in eval): the mean is then over weighted examples.

    Example:
        >>> objective = MeanLossObjective(
        ...     lambda labels, outputs: tf.nn.sparse_softmax_cross_entropy_with_logits(
        ...         labels["label_ids"], outputs["logits"]))
    """

    def __init__(self, per_example_loss: Callable[[Tensors, Tensors], tf.Tensor],
                 metrics_fn: Callable[[], dict[str, keras.metrics.Metric]] | None = None,
                 update_fn: Callable[[Mapping[str, Any], Tensors, Tensors], None] | None = None,
                 example_weight_key: str | None = None):
        self._per_example_loss = per_example_loss
        self._metrics_fn = metrics_fn
        self._update_fn = update_fn
        self._weight_key = example_weight_key

    def _weights(self, labels: Tensors) -> tf.Tensor:
        """[B] example weights: `labels[example_weight_key]`, or ones."""
        if self._weight_key is not None:
            return tf.reshape(tf.cast(labels[self._weight_key], tf.float32), [-1])
        batch_size = tf.shape(tf.nest.flatten(labels)[0])[0]
        return tf.ones([batch_size], tf.float32)

    def normalizers(self, labels: Tensors) -> dict[str, tf.Tensor]:
        return {"examples": tf.reduce_sum(self._weights(labels))}

    def loss(self, labels: Tensors, outputs: Tensors, normalizers: Tensors) -> tf.Tensor:
        losses = tf.reshape(tf.cast(self._per_example_loss(labels, outputs), tf.float32), [-1])
        total = tf.reduce_sum(losses * self._weights(labels))
        return tf.math.divide_no_nan(total, normalizers["examples"])

    def create_metrics(self) -> dict[str, keras.metrics.Metric]:
        return self._metrics_fn() if self._metrics_fn else {}

    def update_metrics(self, metrics, labels, outputs) -> None:
        if self._update_fn:
            self._update_fn(metrics, labels, outputs)
