"""GELU and LayerNorm for training: the same forward ops, a backward pass of one XLA kernel each.

TensorFlow differentiates tanh-GELU and LayerNorm op by op: about 15 element-wise kernels per
GELU over the [tokens, intermediate] activations and about 12 per LayerNorm, each a pass over
memory, and neither Grappler nor oneDNN has a fused gradient for them (nor, in training, a
fused forward GELU: its input is kept for the gradient, so the remapper leaves it unfused).
Here the derivative is written out and compiled by XLA into one loop. Measured on an AMD
EPYC, 2 threads, oneDNN on (benchmarks/fused_gradients.py): GELU forward + backward on
[1024, 3072] 17.1 → 6.0 ms, LayerNorm on [1024, 768] 5.0 → 3.9 ms (benchmarks/RESULTS.md,
"Fused gradients").

The forward pass is the plain one (the same ops and numbers; serving graphs, which never take
a gradient, keep their oneDNN fusions). The gradient is the analytic derivative in float32,
equal to autodiff's within float round-off (tests/layers/test_fused_gradients.py checks both
against a float64 NumPy reference).
"""

from __future__ import annotations

import math
from typing import Callable

import keras
import tensorflow as tf

from albert_tf.layers.activations import gelu_exact, gelu_tanh

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715  # the tanh approximation's coefficient (the original's gelu)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _gelu_tanh_backward(x: tf.Tensor, dy: tf.Tensor) -> tf.Tensor:
    """dy · d/dx [x/2 · (1 + tanh(c (x + a x³)))], in float32, one XLA loop."""
    xf, dyf = tf.cast(x, tf.float32), tf.cast(dy, tf.float32)
    x2 = xf * xf
    t = tf.tanh(_SQRT_2_OVER_PI * xf * (1.0 + _GELU_CUBIC * x2))
    slope = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * _SQRT_2_OVER_PI * (
        1.0 + 3.0 * _GELU_CUBIC * x2)
    return tf.cast(dyf * slope, dy.dtype)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _gelu_exact_backward(x: tf.Tensor, dy: tf.Tensor) -> tf.Tensor:
    """dy · (Φ(x) + x φ(x)), in float32, one XLA loop."""
    xf, dyf = tf.cast(x, tf.float32), tf.cast(dy, tf.float32)
    cdf = 0.5 * (1.0 + tf.math.erf(xf * _INV_SQRT_2))
    pdf = _INV_SQRT_2PI * tf.exp(-0.5 * xf * xf)
    return tf.cast(dyf * (cdf + xf * pdf), dy.dtype)


def _with_backward(forward: Callable, backward: Callable) -> Callable:
    def activation(x):
        @tf.custom_gradient
        def apply(x):
            return forward(x), lambda dy: backward(x, dy)

        return apply(x)

    activation.__name__ = f"{forward.__name__}_fused_gradient"
    activation.__doc__ = f"{forward.__name__} with its gradient in one XLA kernel (training)."
    return activation


gelu_tanh_fused_gradient = _with_backward(gelu_tanh, _gelu_tanh_backward)
gelu_exact_fused_gradient = _with_backward(gelu_exact, _gelu_exact_backward)

_FUSED = {gelu_tanh: gelu_tanh_fused_gradient, gelu_exact: gelu_exact_fused_gradient}


def with_fused_gradient(activation: Callable) -> Callable:
    """The training form of `activation`: GELU (either form) with its one-kernel gradient;
    any other activation as it is (TensorFlow's own gradients are single kernels there)."""
    return _FUSED.get(activation, activation)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _layer_norm_backward(x: tf.Tensor, gamma: tf.Tensor, dy: tf.Tensor, epsilon: tf.Tensor):
    """d/d(x, γ, β) of LayerNorm over the last axis, in one XLA loop:
    dx = inv · (g − mean(g) − x̂ · mean(g · x̂)) with g = dy · γ, x̂ = (x − μ) · inv."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inv = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
    normalized = centered * inv
    g = dy * gamma
    dx = inv * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
                - normalized * tf.reduce_mean(g * normalized, axis=-1, keepdims=True))
    width = tf.shape(x)[-1:]
    rows = tf.concat([[-1], width], axis=0)  # any leading axes: the parameters' sums over them
    return (dx, tf.reduce_sum(tf.reshape(dy * normalized, rows), axis=0),
            tf.reduce_sum(tf.reshape(dy, rows), axis=0))


def layer_norm_fused_gradient(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor,
                              epsilon: float) -> tf.Tensor:
    """LayerNorm over the last axis in float32 (Keras' forward ops) with its gradient with
    respect to x, γ and β in one XLA kernel."""

    @tf.custom_gradient
    def apply(x, gamma, beta):
        y = keras.ops.layer_normalization(x, gamma, beta, axis=-1, epsilon=epsilon)

        def backward(dy):
            return _layer_norm_backward(x, gamma, dy, tf.constant(epsilon, tf.float32))

        return y, backward

    return apply(x, gamma, beta)
