"""Pretraining's model and loss: the pretrainer (MLM + SOP heads) and its objective.

Faithfulness §4.1 (MLM loss Σw·ℓ/(Σw+1e-5)), §4.2 (SOP mean cross-entropy), §4.3 (total = sum);
the metrics it updates are `metrics.py`'s (§4.4), the inputs it reads `records.py`'s (§6.2).
"""

from __future__ import annotations

from typing import Mapping

import keras
import tensorflow as tf

from albert_tf.pretraining.metrics import METRIC_NAMES, create_metrics
from albert_tf.training.objective import Objective, Tensors

__all__ = ["METRIC_NAMES", "MLM_EPSILON", "PretrainingObjective", "masked_lm_example_losses",
           "masked_lm_loss", "sentence_order_example_losses", "sentence_order_loss"]

MLM_EPSILON = 1e-5  # added to Σw in the MLM denominator (faithfulness §4.1)


def masked_lm_example_losses(mlm_logits: tf.Tensor, masked_lm_ids: tf.Tensor) -> tf.Tensor:
    """ℓ_j = −log softmax(logits_j)[id_j], float32 [B, P] (faithfulness §4.1 step 4)."""
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(masked_lm_ids, tf.int32), logits=tf.cast(mlm_logits, tf.float32))


def sentence_order_example_losses(sop_logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """Per-example SOP cross-entropy, float32 [B]; labels [B] or [B, 1] (faithfulness §4.2)."""
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(tf.cast(labels, tf.int32), [-1]), logits=tf.cast(sop_logits, tf.float32))


def masked_lm_loss(mlm_logits: tf.Tensor, masked_lm_ids: tf.Tensor,
                   masked_lm_weights: tf.Tensor) -> tf.Tensor:
    """Σ_j w_j·ℓ_j / (Σ_j w_j + 1e-5) over one batch (faithfulness §4.1 step 5)."""
    weights = tf.cast(masked_lm_weights, tf.float32)
    losses = masked_lm_example_losses(mlm_logits, masked_lm_ids)
    return tf.reduce_sum(weights * losses) / (tf.reduce_sum(weights) + MLM_EPSILON)


def sentence_order_loss(sop_logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """Unweighted mean SOP cross-entropy over one batch (faithfulness §4.2)."""
    return tf.reduce_mean(sentence_order_example_losses(sop_logits, labels))


class PretrainingObjective(Objective):
    """total_loss = masked_lm_loss + sentence_order_loss (faithfulness §4.3), normalised over the
    global batch (so micro-batches and replicas add up to the one-device loss).

    Labels: masked_lm_ids [B,P], masked_lm_weights [B,P], next_sentence_labels [B] or [B,1].
    Outputs: the AlbertPretrainer's mlm_logits [B,P,V] and sop_logits [B,2].
    `sentence_prediction=False` (ours, `--sentence_prediction=none`) trains the masked LM
    alone: the sentence loss and its metrics are left out (the head stays, untrained).
    """

    def __init__(self, sentence_prediction: bool = True):
        self.sentence_prediction = sentence_prediction

    def normalizers(self, labels: Tensors) -> dict[str, tf.Tensor]:
        batch_size = tf.shape(labels["next_sentence_labels"])[0]
        return {"masked_lm": tf.reduce_sum(tf.cast(labels["masked_lm_weights"], tf.float32)),
                "sentence_order": tf.cast(batch_size, tf.float32)}

    def loss(self, labels: Tensors, outputs: Tensors, normalizers: Tensors) -> tf.Tensor:
        weights = tf.cast(labels["masked_lm_weights"], tf.float32)
        mlm = masked_lm_example_losses(outputs["mlm_logits"], labels["masked_lm_ids"])
        mlm_share = tf.reduce_sum(weights * mlm) / (normalizers["masked_lm"] + MLM_EPSILON)
        if not self.sentence_prediction:
            return mlm_share
        sop = sentence_order_example_losses(outputs["sop_logits"], labels["next_sentence_labels"])
        sop_share = tf.math.divide_no_nan(tf.reduce_sum(sop), normalizers["sentence_order"])
        return mlm_share + sop_share

    def create_metrics(self) -> dict[str, keras.metrics.Metric]:
        return create_metrics(self.sentence_prediction)

    def update_metrics(self, metrics: Mapping[str, keras.metrics.Metric], labels: Tensors,
                       outputs: Tensors) -> None:
        """Streaming metrics of faithfulness §4.4: MLM ones weighted by masked_lm_weights."""
        vocab_size = tf.shape(outputs["mlm_logits"])[-1]
        mlm_logits = tf.reshape(tf.cast(outputs["mlm_logits"], tf.float32), [-1, vocab_size])
        mlm_ids = tf.reshape(labels["masked_lm_ids"], [-1])
        weights = tf.reshape(tf.cast(labels["masked_lm_weights"], tf.float32), [-1])
        metrics["masked_lm_accuracy"].update_state(mlm_ids, mlm_logits, sample_weight=weights)
        metrics["masked_lm_loss"].update_state(
            masked_lm_example_losses(mlm_logits, mlm_ids), sample_weight=weights)
        if self.sentence_prediction:
            sop_labels = tf.reshape(labels["next_sentence_labels"], [-1])
            sop_logits = tf.cast(outputs["sop_logits"], tf.float32)
            metrics["sentence_order_accuracy"].update_state(sop_labels, sop_logits)
            metrics["sentence_order_loss"].update_state(
                sentence_order_example_losses(sop_logits, sop_labels))
