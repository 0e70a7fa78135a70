"""GELU and LayerNorm for training: forward and backward passes of one XLA kernel each.

TensorFlow runs tanh-GELU and LayerNorm op by op: about 8 element-wise kernels per GELU forward
and 15 in its gradient over the [tokens, intermediate] activations, about 12 per LayerNorm
(with the residual sum and the casts of mixed precision around it), each a pass over memory.
Neither Grappler nor oneDNN fuses them in training (the remapper's MatMul + bias + GELU needs
the pre-activation to have no other consumer, and the gradient keeps it), so here each is one
XLA-compiled loop (a `tf.function(jit_compile=True)` called from the plain graph), used only
when `training` is true. Measured (benchmarks/RESULTS.md, "Fused gradients" and "On a Xeon
with AMX"): GELU forward + backward on [1024, 3072] 17.1 → 6.0 ms on an AMD EPYC (gradient
only), 12.3 → 3.3 ms on a Xeon; the ALBERT-base mixed-bf16 train step on that Xeon 1078 →
885 ms (1.14× → 1.30× torch bf16 autocast).

Every kernel computes in float32 and rounds once to the compute dtype: the same numbers as
TensorFlow's ops in float32 within float round-off, and in mixed bfloat16 without the bf16
roundings between TensorFlow's GELU ops (tests/layers/test_fused_gradients.py checks values
and gradients against float64 NumPy references of the formulas). Inference graphs (serving,
prediction) keep TensorFlow's ops and their oneDNN fusions.
"""

from __future__ import annotations

import math
from typing import Callable

import tensorflow as tf

from albert_tf.layers.activations import gelu_exact, gelu_tanh

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715  # the tanh approximation's coefficient (the original's gelu)


def _one_kernel(function: Callable) -> Callable:
    """`function` XLA-compiled into one loop, called from the plain graph."""
    return tf.function(function, jit_compile=True, reduce_retracing=True, autograph=False)


@_one_kernel
def _gelu_tanh_forward(x: tf.Tensor) -> tf.Tensor:
    """x/2 · (1 + tanh(c (x + a x³))) in float32 (tf.nn.gelu's order of operations)."""
    xf = tf.cast(x, tf.float32)
    inner = _SQRT_2_OVER_PI * (xf + _GELU_CUBIC * (xf * xf * xf))
    return tf.cast(0.5 * xf * (1.0 + tf.tanh(inner)), x.dtype)


@_one_kernel
def _gelu_exact_forward(x: tf.Tensor) -> tf.Tensor:
    """x/2 · (1 + erf(x / √2)) in float32 (tf.nn.gelu's exact form)."""
    xf = tf.cast(x, tf.float32)
    return tf.cast(0.5 * xf * (1.0 + tf.math.erf(xf * _INV_SQRT_2)), x.dtype)


@_one_kernel
def _gelu_tanh_backward(x: tf.Tensor, dy: tf.Tensor) -> tf.Tensor:
    """dy · d/dx [x/2 · (1 + tanh(c (x + a x³)))], in float32, one XLA loop."""
    xf, dyf = tf.cast(x, tf.float32), tf.cast(dy, tf.float32)
    x2 = xf * xf
    t = tf.tanh(_SQRT_2_OVER_PI * xf * (1.0 + _GELU_CUBIC * x2))
    slope = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * _SQRT_2_OVER_PI * (
        1.0 + 3.0 * _GELU_CUBIC * x2)
    return tf.cast(dyf * slope, dy.dtype)


@_one_kernel
def _gelu_exact_backward(x: tf.Tensor, dy: tf.Tensor) -> tf.Tensor:
    """dy · (Φ(x) + x φ(x)), in float32, one XLA loop."""
    xf, dyf = tf.cast(x, tf.float32), tf.cast(dy, tf.float32)
    cdf = 0.5 * (1.0 + tf.math.erf(xf * _INV_SQRT_2))
    pdf = _INV_SQRT_2PI * tf.exp(-0.5 * xf * xf)
    return tf.cast(dyf * (cdf + xf * pdf), dy.dtype)


def _with_backward(reference: Callable, forward: Callable, backward: Callable) -> Callable:
    """`reference` (the plain activation) as one XLA kernel forward and one backward."""
    def activation(x):
        @tf.custom_gradient
        def apply(x):
            return forward(x), lambda dy: backward(x, dy)

        return apply(x)

    activation.__name__ = f"{reference.__name__}_fused_gradient"
    activation.__doc__ = (f"{reference.__name__} with its forward and gradient in one XLA kernel "
                          "each (training).")
    return activation


gelu_tanh_fused_gradient = _with_backward(gelu_tanh, _gelu_tanh_forward, _gelu_tanh_backward)
gelu_exact_fused_gradient = _with_backward(gelu_exact, _gelu_exact_forward, _gelu_exact_backward)

_FUSED = {gelu_tanh: gelu_tanh_fused_gradient, gelu_exact: gelu_exact_fused_gradient}


def with_fused_gradient(activation: Callable) -> Callable:
    """The training form of `activation`: GELU (either form) with its one-kernel gradient;
    any other activation as it is (TensorFlow's own gradients are single kernels there)."""
    return _FUSED.get(activation, activation)


def _layer_norm_forward_math(x, gamma, beta, epsilon):
    """Keras' LayerNorm over the last axis (`keras.ops.layer_normalization`'s order of
    operations: x · inv + (β − mean · inv) with inv = γ / sqrt(var + ε)), x in float32."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
    inv = tf.math.rsqrt(variance + epsilon) * gamma
    return x * inv + (beta - mean * inv)


def _layer_norm_gradient_math(x, gamma, dy, epsilon):
    """d/d(x, γ, β) of LayerNorm over the last axis, x and dy in float32:
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


@_one_kernel
def _layer_norm_forward(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: tf.Tensor):
    return _layer_norm_forward_math(x, gamma, beta, epsilon)


@_one_kernel
def _layer_norm_backward(x: tf.Tensor, gamma: tf.Tensor, dy: tf.Tensor, epsilon: tf.Tensor):
    return _layer_norm_gradient_math(x, gamma, dy, epsilon)


def layer_norm_fused_gradient(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor,
                              epsilon: float) -> tf.Tensor:
    """LayerNorm over the last axis of float32 `x`, forward and gradient (with respect to x,
    γ and β) in one XLA kernel each."""
    eps = tf.constant(epsilon, tf.float32)

    @tf.custom_gradient
    def apply(x, gamma, beta):
        return (_layer_norm_forward(x, gamma, beta, eps),
                lambda dy: _layer_norm_backward(x, gamma, dy, eps))

    return apply(x, gamma, beta)


@_one_kernel
def _residual_layer_norm_forward(out, residual, gamma, beta, epsilon):
    x = tf.cast(out, tf.float32) + tf.cast(residual, tf.float32)
    return tf.cast(_layer_norm_forward_math(x, gamma, beta, epsilon), out.dtype)


@_one_kernel
def _residual_layer_norm_backward(out, residual, gamma, dy, epsilon):
    x = tf.cast(out, tf.float32) + tf.cast(residual, tf.float32)  # recomputed, not kept
    dx, dgamma, dbeta = _layer_norm_gradient_math(x, gamma, tf.cast(dy, tf.float32), epsilon)
    return tf.cast(dx, out.dtype), tf.cast(dx, residual.dtype), dgamma, dbeta


def residual_layer_norm_fused(out: tf.Tensor, residual: tf.Tensor, gamma: tf.Tensor,
                              beta: tf.Tensor, epsilon: float) -> tf.Tensor:
    """LayerNorm(out + residual) over the last axis, the sum and the norm in float32, the
    result in `out`'s dtype (the block ending of §2.9): the casts, the sum and the norm in one
    XLA kernel, its gradient in another (which recomputes the sum instead of keeping it)."""
    eps = tf.constant(epsilon, tf.float32)

    @tf.custom_gradient
    def apply(out, residual, gamma, beta):
        return (_residual_layer_norm_forward(out, residual, gamma, beta, eps),
                lambda dy: _residual_layer_norm_backward(out, residual, gamma, dy, eps))

    return apply(out, residual, gamma, beta)
