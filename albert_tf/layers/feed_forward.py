"""Feed-forward sublayer of the ALBERT block, with its residual and post-LayerNorm.

Mirrors scope `ffn_1` + `LayerNorm_1` of the original (faithfulness §2.4 steps 8–10): dense to I
with tanh-gelu, dense back to H, dropout, LayerNorm(out + input). No dropout inside. In
training the activation and the residual LayerNorm are one XLA kernel each, forward and
backward (`fused_gradients`).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.activations import get_activation
from albert_tf.layers.dropout import apply_dropout
from albert_tf.layers.fused_gradients import with_fused_gradient
from albert_tf.layers.initializers import truncated_normal
from albert_tf.layers.normalization import layer_norm, residual_layer_norm


@keras.saving.register_keras_serializable(package="albert_tf")
class FeedForwardSublayer(keras.layers.Layer):
    """dense(H→I, act) → dense(I→H) → dropout → LayerNorm(out + input).

    `dropout_seeds` (one per `dropout_layers`, from `dropout.draw_seeds`) fixes the mask.
    """

    def __init__(
        self,
        hidden_size: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        initializer_range: float = 0.02,
        hidden_dropout_prob: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.hidden_dropout_prob = hidden_dropout_prob
        init = truncated_normal(initializer_range)
        # The activation is applied in `call` (right after the bias, as Dense would: the serving
        # graph fuses MatMul + bias + gelu), so that training can take its fused gradient.
        self.activation = get_activation(hidden_act)
        self.training_activation = with_fused_gradient(self.activation)
        self.intermediate = keras.layers.Dense(
            intermediate_size, kernel_initializer=init, dtype=self.dtype_policy, name="intermediate")
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init,
                                               dtype=self.dtype_policy, name="output_dense")
        self.dropout = keras.layers.Dropout(hidden_dropout_prob, dtype=self.dtype_policy,
                                            name="dropout")
        self.layer_norm = layer_norm("layer_norm")

    def build(self, input_shape):
        self.intermediate.build((None, None, self.hidden_size))
        self.output_dense.build((None, None, self.intermediate_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    @property
    def dropout_layers(self) -> tuple[keras.layers.Dropout, ...]:
        """The one dropout, on the output (none inside, as the original)."""
        return (self.dropout,)

    def call(self, x, training=None, dropout_seeds=None):
        (seed,) = dropout_seeds or (None,)
        shape = ops.shape(x)
        tokens = ops.reshape(x, (-1, self.hidden_size))  # rank 2: fused MatMul+bias+gelu, as attention
        activation = self.training_activation if training else self.activation
        pre = self.intermediate(tokens)
        # Grappler's remapper visits nodes in name order: the GELU ops must sort after the
        # Dense's (`intermediate_1/BiasAdd`), or it rewrites the GELU's Pow before it matches
        # MatMul + bias + GELU, and the serving graph loses that fusion (test_onednn_fusions).
        with tf.name_scope("intermediate_activation"):
            inner = activation(pre)
        out = apply_dropout(self.dropout, self.output_dense(inner), training, seed)
        return residual_layer_norm(self.layer_norm, out, tokens, self.compute_dtype, shape, training)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            hidden_dropout_prob=self.hidden_dropout_prob,
        )
        return config
