"""Pooler and output heads: masked-LM (tied decoder), sentence-order / classification.

Faithfulness §2.5 (pooler), §4.1 (MLM head), §4.2 (SOP head), §8.4 (classifier). Logits are
float32 under any mixed-precision policy.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from albert_tf.layers.activations import get_activation
from albert_tf.layers.embedding import AlbertEmbedding
from albert_tf.layers.gather import gather_positions
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.normalization import layer_norm


@keras.saving.register_keras_serializable(package="albert_tf")
class Pooler(keras.layers.Layer):
    """tanh(dense(first token)): the pooled output; no dropout, as the original (faithfulness §2.5)."""

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs: Any):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation="tanh", kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, input_shape):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Gather masked positions → dense to E (hidden_act) → LayerNorm → tied decoder + bias.

    `embedding` is the model's AlbertEmbedding: its word table is the decoder, as the
    original ties them (faithfulness §3.2). Built standalone (e.g. from_config), the head makes
    its own V×E decoder table instead. The head computes in float32 (its LayerNorm and logits);
    its E-transform dense computes in `dense_dtype`, the model's policy (default the global one).
    """

    def __init__(self, vocab_size: int, hidden_size: int, embedding_size: int,
                 hidden_act: str = "gelu", initializer_range: float = 0.02,
                 embedding: AlbertEmbedding | None = None,
                 dense_dtype: str | keras.DTypePolicy | dict | None = None, **kwargs: Any):
        kwargs.setdefault("dtype", "float32")  # logits in float32 under mixed precision
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        # Kept out of Keras' layer tracking so the tied table is counted once.
        self._embedding = [embedding] if embedding is not None else None
        self.dense = keras.layers.Dense(
            embedding_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), dtype=dense_dtype,
            name="dense")
        self.layer_norm = layer_norm("layer_norm")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.embedding_size))
        if self._embedding is None:
            self.decoder = self.add_weight(
                name="decoder", shape=(self.vocab_size, self.embedding_size),
                initializer=truncated_normal(self.initializer_range), dtype="float32")
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros", dtype="float32")
        self.built = True

    def call(self, sequence_output, masked_lm_positions=None):
        """Logits [B, P, V] at `masked_lm_positions` [B, P] of `sequence_output` [B, S, H];
        without positions, `sequence_output` is already those rows ([B, P, H])."""
        x = sequence_output
        if masked_lm_positions is not None:
            x = gather_positions(sequence_output, masked_lm_positions)
        x = self.layer_norm(self.dense(x))
        if self._embedding is not None:
            logits = self._embedding[0].attend(x)
        else:
            logits = ops.matmul(ops.cast(x, "float32"), ops.transpose(self.decoder))
        return logits + self.output_bias

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                      embedding_size=self.embedding_size, hidden_act=self.hidden_act,
                      initializer_range=self.initializer_range,
                      dense_dtype=keras.dtype_policies.serialize(self.dense.dtype_policy))
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class ClassificationHead(keras.layers.Layer):
    """Dropout → logits = x · output_weightsᵀ + output_bias, weights stored [C, H].

    Computes in float32 (its input is cast) so logits and losses stay float32; its dropout
    runs in `dropout_dtype`, the model's policy (default the global one).
    The original's layout for the SOP head (`cls/seq_relationship`, C=2, no dropout),
    the GLUE classifier (dropout 0.1, faithfulness Q20) and RACE (C=1).
    """

    def __init__(self, num_classes: int, hidden_size: int, initializer_range: float = 0.02,
                 dropout_rate: float = 0.0,
                 dropout_dtype: str | keras.DTypePolicy | dict | None = None, **kwargs: Any):
        kwargs.setdefault("dtype", "float32")  # logits in float32 under mixed precision
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=dropout_dtype, name="dropout")

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(self.num_classes, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), dtype="float32")
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.num_classes,), initializer="zeros", dtype="float32")
        self.built = True

    def call(self, x, training=None):
        x = ops.cast(self.dropout(x, training=training), "float32")
        return ops.matmul(x, ops.transpose(self.output_weights)) + self.output_bias

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(num_classes=self.num_classes, hidden_size=self.hidden_size,
                      initializer_range=self.initializer_range, dropout_rate=self.dropout_rate,
                      dropout_dtype=keras.dtype_policies.serialize(self.dropout.dtype_policy))
        return config
