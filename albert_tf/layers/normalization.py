"""LayerNorm as the original computes it: population statistics, epsilon 1e-12, float32."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.fused_gradients import layer_norm_fused_gradient

# tf.contrib.layers.layer_norm adds 1e-12 to the variance (faithfulness §2.9); Keras' default is 1e-3.
LAYER_NORM_EPSILON = 1e-12


@keras.saving.register_keras_serializable(package="albert_tf")
class LayerNorm(keras.layers.LayerNormalization):
    """Keras' LayerNormalization over the last axis; in training its gradient is one XLA
    kernel (`fused_gradients.layer_norm_fused_gradient`), the forward pass the same ops."""

    def call(self, inputs, training=None):
        if not (training and self._last_axis_affine(inputs)):
            return super().call(inputs)
        gamma, beta = tf.identity(self.gamma), tf.identity(self.beta)  # values, not variables
        return ops.cast(layer_norm_fused_gradient(inputs, gamma, beta, self.epsilon),
                        self.compute_dtype)

    def _last_axis_affine(self, inputs) -> bool:
        """The case the fused gradient computes: float32 input, the last axis, γ and β."""
        rank = len(inputs.shape)
        return (keras.backend.standardize_dtype(inputs.dtype) == "float32"
                and self.scale and self.center and not self.rms_scaling
                and self.axis in ([-1], [rank - 1]))


def layer_norm(name: str) -> LayerNorm:
    """A LayerNorm over the last axis that always computes in float32 (mixed precision safe)."""
    return LayerNorm(axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name)


def residual_layer_norm(norm: keras.layers.LayerNormalization, out, tokens, compute_dtype: str,
                        shape):
    """The block ending of attention and feed-forward: LayerNorm(out + tokens) in float32 (the
    original's post-norm residual, §2.9), back in the compute dtype and the input's `shape`.

    `out` and `tokens` are rank 2 ([B·S, H]): oneDNN fuses the rank-2 MatMul+bias before it.
    """
    summed = ops.cast(out, "float32") + ops.cast(tokens, "float32")
    return ops.reshape(ops.cast(norm(summed), compute_dtype), shape)
