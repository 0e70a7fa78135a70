"""AlbertMultipleChoice: one score per (context, question + option) sequence (faithfulness §10.4)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.layers.heads import ClassificationHead
from albert_tf.models.classifier import CLASSIFIER_INITIALIZER_RANGE
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder, task_encoder
from albert_tf.models.precision import model_config


def merge_choices(x):
    """[B, C, S] → [B·C, S]: every option becomes its own sequence."""
    return tf.reshape(x, [-1, tf.shape(x)[-1]])


@keras.saving.register_keras_serializable(package="albert_tf")
class MergeChoices(keras.layers.Layer):
    """`merge_choices` as a layer of the functional graph."""

    def call(self, x):
        return merge_choices(x)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(keras.Model):
    """Inputs int32 [B, num_choices, S] under the encoder's names → {"logits": [B, num_choices]}.

    Each option is encoded as its own sequence; the pooled output is scored by one
    `output_weights [1, H]` row, and the softmax is over the options (RACE). `dtype`: the
    `DTypePolicy` of the model (see `AlbertEncoder`); default `encoder`'s, or the global policy.
    """

    def __init__(self, config: AlbertConfig, num_choices: int = 4, dropout_rate: float = 0.1,
                 encoder: AlbertEncoder | None = None, dtype: Any = None, **kwargs: Any):
        encoder, policy = task_encoder(config, encoder, dtype)
        head = ClassificationHead(1, config.hidden_size, CLASSIFIER_INITIALIZER_RANGE,
                                  dropout_rate, dropout_dtype=policy, name="classifier_head")
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        merge = MergeChoices(dtype=policy, name="merge_choices")
        flat = {name: merge(t) for name, t in inputs.items()}
        scores = head(encoder(flat)["pooled_output"])  # [B·num_choices, 1]
        logits = ops.reshape(scores, (-1, num_choices))
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.dtype_policy, self.config = policy, config  # Functional drops dtype=
        self.num_choices = num_choices
        self.dropout_rate = dropout_rate
        self.encoder = encoder
        self.classifier_head = head

    def call(self, inputs, training=None, mask=None):
        """The encoder's last block runs at each option's first token alone (as
        `AlbertClassifier`)."""
        # Another encoder (an export's HubEncoder) is called whole, through the graph.
        if not isinstance(self.encoder, AlbertEncoder):
            return super().call(inputs, training=training, mask=mask)
        flat = {name: merge_choices(inputs[name]) for name in INPUT_NAMES}
        scores = self.classifier_head(self.encoder.pooled_output_only(flat, training=training),
                                      training=training)
        return {"logits": tf.reshape(scores, (-1, self.num_choices))}

    def get_config(self) -> dict[str, Any]:
        return model_config(self, num_choices=self.num_choices, dropout_rate=self.dropout_rate)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AlbertMultipleChoice":
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)
