"""SQuAD's model and losses: the span labeler (faithfulness §9.5–9.6) and its per-example losses,
averaged globally by the training loop.

v1: ½ (CE(start logits, start) + CE(end logits, end)), softmax over all positions.
v2: ½ (−log p_start[start] − log p_end[end]) + ½ · sigmoid-CE(cls_logits, is_impossible),
using the head's masked log-probabilities (the end ones conditioned on the gold start).
Positions are 0 ([CLS]) for windows without the answer. All in float32.
"""

from __future__ import annotations

from typing import Mapping

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.models.span_labeler import AlbertSpanLabeler
from albert_tf.training.objective import MeanLossObjective

Tensors = Mapping[str, tf.Tensor]


def _positions(labels: Tensors, name: str) -> tf.Tensor:
    return tf.reshape(tf.cast(labels[name], tf.int32), [-1])


def squad_v1_example_loss(labels: Tensors, outputs: Tensors) -> tf.Tensor:
    """[B] losses of the v1 head."""
    start = tf.nn.sparse_softmax_cross_entropy_with_logits(
        _positions(labels, "start_positions"), tf.cast(outputs["start_logits"], tf.float32))
    end = tf.nn.sparse_softmax_cross_entropy_with_logits(
        _positions(labels, "end_positions"), tf.cast(outputs["end_logits"], tf.float32))
    return 0.5 * (start + end)


def squad_v2_example_loss(labels: Tensors, outputs: Tensors) -> tf.Tensor:
    """[B] losses of the v2 head."""
    start_log_probs = tf.cast(outputs["start_log_probs"], tf.float32)
    end_log_probs = tf.cast(outputs["end_log_probs"], tf.float32)
    start = -tf.gather(start_log_probs, _positions(labels, "start_positions"), batch_dims=1)
    end = -tf.gather(end_log_probs, _positions(labels, "end_positions"), batch_dims=1)
    impossible = tf.reshape(tf.cast(labels["is_impossible"], tf.float32), [-1])
    answer_class = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=impossible, logits=tf.cast(outputs["cls_logits"], tf.float32))
    return 0.5 * (start + end) + 0.5 * answer_class


def squad_objective(version_2_with_negative: bool) -> MeanLossObjective:
    """The loop objective: batch mean of the per-example loss of the chosen head."""
    return MeanLossObjective(squad_v2_example_loss if version_2_with_negative
                             else squad_v1_example_loss)


def span_labeler(config: AlbertConfig, version_2_with_negative: bool, start_n_top: int,
                 end_n_top: int, dropout_prob: float,
                 encoder: keras.layers.Layer | None = None) -> AlbertSpanLabeler:
    """v1's start/end logits or v2's beam head (`start_n_top` × `end_n_top`, answer class
    with `dropout_prob`) over `encoder`, or a fresh encoder."""
    return AlbertSpanLabeler(config, version_2_with_negative, start_n_top, end_n_top,
                             dropout_prob, encoder=encoder)
