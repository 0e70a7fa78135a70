"""Self-attention sublayer of the ALBERT block, with its residual and post-LayerNorm.

Mirrors scope `attention_1` + `LayerNorm` of the original (faithfulness §2.4 steps 1–7):
Q/K/V kernels stored [H, N·D], additive mask −10000 on padded keys, softmax in float32.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.dropout import apply_dropout
from albert_tf.layers.gather import select_rows
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.normalization import layer_norm, residual_layer_norm

# The original adds −10000 (not −inf) to masked scores (faithfulness §2.9, Q31). With every key
# masked this equals no mask at all, which −inf would not reproduce.
MASK_ADDER = -10000.0


def attention_mask_bias(input_mask):
    """[B, T] 0/1 mask → float32 [B, 1, 1, T] additive bias (0 or −10000) on key positions."""
    mask = ops.cast(input_mask, "float32")
    return ((1.0 - mask) * MASK_ADDER)[:, None, None, :]


@keras.saving.register_keras_serializable(package="albert_tf")
class AttentionSublayer(keras.layers.Layer):
    """Multi-head self-attention → output dense → dropout → LayerNorm(out + input).

    Call with `x` [B, S, H] and the 0/1 `input_mask` [B, S] of real (1) and padded (0) keys;
    `dropout_seeds` (one per `dropout_layers`, from `dropout.draw_seeds`) fixes the masks.
    With `query_positions` (per-example positions [B, P], or a slice of rows such as
    `gather.FIRST_TOKEN`) only those rows are computed (every row still a key and a value):
    the output is [B, P, H], the full output's rows at those positions.
    """

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        initializer_range: float = 0.02,
        hidden_dropout_prob: float = 0.0,
        attention_probs_dropout_prob: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size {hidden_size} is not divisible by num_attention_heads {num_attention_heads}")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.initializer_range = initializer_range
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob

        def dense(name: str) -> keras.layers.Dense:
            return keras.layers.Dense(
                hidden_size, kernel_initializer=truncated_normal(initializer_range),
                dtype=self.dtype_policy, name=name)

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.probs_dropout = keras.layers.Dropout(attention_probs_dropout_prob,
                                                  dtype=self.dtype_policy, name="probs_dropout")
        self.output_dropout = keras.layers.Dropout(hidden_dropout_prob, dtype=self.dtype_policy,
                                                   name="output_dropout")
        self.layer_norm = layer_norm("layer_norm")

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value, self.output_dense):
            dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    @property
    def dropout_layers(self) -> tuple[keras.layers.Dropout, ...]:
        """The dropouts on the attention probabilities and on the output, in call order."""
        return (self.probs_dropout, self.output_dropout)

    def _split_heads(self, x, batch, seq):
        """[B, S, N·D] → [B, N, S, D] (column n·D + d is head n, dim d, as the original)."""
        x = ops.reshape(x, (batch, seq, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, x, input_mask=None, training=None, dropout_seeds=None, query_positions=None):
        probs_seed, output_seed = dropout_seeds or (None, None)
        shape = ops.shape(x)
        batch, seq = shape[0], shape[1]
        # The dense layers see tokens as rows, [B·S, H]: on a rank-2 input TF's oneDNN
        # rewrite fuses MatMul + bias (+ activation) into one kernel; on rank 3 Keras
        # puts reshapes around the MatMul and the bias add runs as a separate pass.
        tokens = ops.reshape(x, (-1, self.hidden_size))
        # Query rows (and the residual) are every token, or only the rows asked for.
        query_shape, query_tokens = shape, tokens
        if query_positions is not None:
            queries = select_rows(x, query_positions)
            query_shape = ops.shape(queries)
            query_tokens = ops.reshape(queries, (-1, self.hidden_size))
        q = self._split_heads(self.query(query_tokens), batch, query_shape[1])
        k = self._split_heads(self.key(tokens), batch, seq)
        v = self._split_heads(self.value(tokens), batch, seq)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
        scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(self.head_size))
        if input_mask is not None:
            # Built here in float32: a float bias passed in would be autocast to half precision.
            scores = scores + attention_mask_bias(input_mask)
        probs = ops.softmax(scores, axis=-1)  # float32 under any policy
        probs = apply_dropout(self.probs_dropout, ops.cast(probs, self.compute_dtype), training,
                              probs_seed)
        context = ops.matmul(probs, v)  # [B, N, S, D]
        # Back to the tokens' own shape tensor (not -1): Grappler then knows the output dense's
        # result has the residual's shape and fuses MatMul + bias + residual add, also in
        # the dynamic-shape serving graph.
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), tf.shape(query_tokens))
        out = apply_dropout(self.output_dropout, self.output_dense(context), training, output_seed)
        return residual_layer_norm(self.layer_norm, out, query_tokens, self.compute_dtype,
                                   query_shape, training)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            initializer_range=self.initializer_range,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
        )
        return config
