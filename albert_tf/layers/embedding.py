"""Factorized embedding: V×E word table + position + token type, LayerNorm, dropout.

ALBERT's first parameter reduction (paper §3.1): tokens live in a small E-wide space
(E=128) and a separate projection lifts them to the hidden width H (faithfulness §2.1–§2.2).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.normalization import layer_norm


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbedding(keras.layers.Layer):
    """Word + token-type + position embeddings, then LayerNorm (ε 1e-12) and dropout.

    Positions are always 0..S-1; S > max_position_embeddings is an error. The word
    table is also the MLM decoder (`attend`), tied as in the original. Word and token-type
    rows are gathered, as the original's `tf.nn.embedding_lookup` off TPU: their gradients
    are IndexedSlices with one row per token, which the clipping norm counts per
    occurrence (faithfulness Q35); the position rows are a slice (dense gradient).

    Example:
        >>> emb = AlbertEmbedding(vocab_size=100, embedding_size=16)
        >>> emb(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape
        TensorShape([2, 5, 16])
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        dropout_rate: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.layer_norm = layer_norm("layer_norm")
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = truncated_normal(self.initializer_range)
        # Tables are float32 under any policy; lookups are cast to the compute dtype.
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.embedding_size),
            initializer=init, dtype="float32")
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.embedding_size),
            initializer=init, dtype="float32")
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
            initializer=init, dtype="float32")
        self.layer_norm.build((None, None, self.embedding_size))
        self.built = True

    def _check_length(self, input_ids) -> Any:
        """Static lengths fail at trace time; dynamic ones with a runtime assertion."""
        static_len = input_ids.shape[1]
        if static_len is not None:
            if static_len > self.max_position_embeddings:
                raise ValueError(
                    f"sequence length {static_len} exceeds max_position_embeddings "
                    f"({self.max_position_embeddings})")
            return static_len
        seq_len = tf.shape(input_ids)[1]
        check = tf.debugging.assert_less_equal(
            seq_len, self.max_position_embeddings,
            message=f"sequence length exceeds max_position_embeddings ({self.max_position_embeddings})")
        with tf.control_dependencies([check]):
            return tf.identity(seq_len)

    def call(self, input_ids, token_type_ids=None, training=None):
        seq_len = self._check_length(input_ids)
        x = ops.take(self.word_embeddings, input_ids, axis=0)
        if token_type_ids is None:
            token_type_ids = ops.zeros_like(input_ids)
        x = x + ops.take(self.token_type_embeddings, token_type_ids, axis=0)
        x = x + self.position_embeddings[None, :seq_len, :]
        x = self.layer_norm(x)
        x = ops.cast(x, self.compute_dtype)
        return self.dropout(x, training=training)

    def attend(self, x):
        """Scores x [..., E] against every word: x · word_embeddingsᵀ (the tied MLM decoder)."""
        x = ops.cast(x, "float32")
        return ops.matmul(x, ops.transpose(self.word_embeddings))

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_size=self.embedding_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            dropout_rate=self.dropout_rate,
        )
        return config
