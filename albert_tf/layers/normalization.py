"""LayerNorm as the original computes it: population statistics, epsilon 1e-12, float32."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.fused_gradients import layer_norm_fused_gradient, residual_layer_norm_fused

# tf.contrib.layers.layer_norm adds 1e-12 to the variance (faithfulness §2.9); Keras' default is 1e-3.
LAYER_NORM_EPSILON = 1e-12


@keras.saving.register_keras_serializable(package="albert_tf")
class LayerNorm(keras.layers.LayerNormalization):
    """Keras' LayerNormalization over the last axis; in training its forward pass and its
    gradient are one XLA kernel each (`fused_gradients`), Keras' ops otherwise."""

    def call(self, inputs, training=None):
        if not (training and self.fusable(inputs)
                and keras.backend.standardize_dtype(inputs.dtype) == "float32"):
            return super().call(inputs)
        return ops.cast(layer_norm_fused_gradient(inputs, *self._values(), self.epsilon),
                        self.compute_dtype)

    def fusable(self, inputs) -> bool:
        """The case the fused kernels compute: the last axis, with γ and β."""
        rank = len(inputs.shape)
        return (self.scale and self.center and not self.rms_scaling
                and self.axis in ([-1], [rank - 1]))

    def residual(self, out, residual, compute_dtype: str, training=None):
        """LayerNorm(out + residual), the sum and the norm in float32, in `compute_dtype`: in
        training the casts, the sum and the norm are one XLA kernel (and the gradient one)."""
        if (training and self.fusable(out)
                and keras.backend.standardize_dtype(out.dtype) == compute_dtype
                and keras.backend.standardize_dtype(residual.dtype) == compute_dtype):
            return residual_layer_norm_fused(out, residual, *self._values(), self.epsilon)
        summed = ops.cast(out, "float32") + ops.cast(residual, "float32")
        return ops.cast(self(summed), compute_dtype)

    def _values(self) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.identity(self.gamma), tf.identity(self.beta)  # values, not variables


def layer_norm(name: str) -> LayerNorm:
    """A LayerNorm over the last axis that always computes in float32 (mixed precision safe)."""
    return LayerNorm(axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name)


def residual_layer_norm(norm: LayerNorm, out, tokens, compute_dtype: str, shape, training=None):
    """The block ending of attention and feed-forward: LayerNorm(out + tokens) in float32 (the
    original's post-norm residual, §2.9), back in the compute dtype and the input's `shape`.

    `out` and `tokens` are rank 2 ([B·S, H]): oneDNN fuses the rank-2 MatMul+bias before it.
    """
    return ops.reshape(norm.residual(out, tokens, compute_dtype, training), shape)
