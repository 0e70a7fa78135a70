"""Trainable Keras models built from `albert_tf.layers`; each takes `dtype=` (a Keras
`DTypePolicy`), passed to every layer (`precision`)."""

from albert_tf.models.classifier import AlbertClassifier
from albert_tf.models.encoder import FEATURE_TO_INPUT, INPUT_NAMES, AlbertEncoder, encoder_inputs
from albert_tf.models.multiple_choice import AlbertMultipleChoice
from albert_tf.models.precision import float32_copy, policy_of
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.models.span_labeler import AlbertSpanLabeler

__all__ = ["AlbertClassifier", "AlbertEncoder", "AlbertMultipleChoice", "AlbertPretrainer",
           "AlbertSpanLabeler", "FEATURE_TO_INPUT", "INPUT_NAMES", "encoder_inputs",
           "float32_copy", "policy_of"]
