"""The training forms of GELU and LayerNorm (albert_tf.layers.fused_gradients): the same forward
numbers as the plain ops, and gradients equal to a float64 NumPy derivative of the formulas and
to TensorFlow's own autodiff within float32 round-off."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.layers import gelu_exact, gelu_tanh, layer_norm
from albert_tf.layers.fused_gradients import (
    gelu_exact_fused_gradient, gelu_tanh_fused_gradient, layer_norm_fused_gradient,
    with_fused_gradient)

EPSILON = 1e-12
RNG = np.random.default_rng(7)


def _gelu_tanh_slope(x: np.ndarray) -> np.ndarray:
    """d/dx of x/2 · (1 + tanh(√(2/π)(x + 0.044715 x³))), by hand, in float64."""
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * c * (1 + 3 * 0.044715 * x ** 2)


def _gelu_exact_slope(x: np.ndarray) -> np.ndarray:
    """d/dx of x · Φ(x) = Φ(x) + x · φ(x), in float64."""
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-x ** 2 / 2) / math.sqrt(2 * math.pi)


def _grad(fn, x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x, output_gradients=dy)


@pytest.mark.parametrize("plain, fused, slope", [
    (gelu_tanh, gelu_tanh_fused_gradient, _gelu_tanh_slope),
    (gelu_exact, gelu_exact_fused_gradient, _gelu_exact_slope),
])
def test_gelu_gradient_matches_the_derivative_and_autodiff(plain, fused, slope):
    x64 = np.concatenate([RNG.normal(0, 3, 4000), np.linspace(-12, 12, 97)])
    dy64 = RNG.normal(0, 1, x64.shape)
    x, dy = tf.constant(x64, tf.float32), tf.constant(dy64, tf.float32)
    y_fused, g_fused = _grad(fused, x, dy)
    y_plain, g_plain = _grad(plain, x, dy)
    np.testing.assert_array_equal(y_fused.numpy(), y_plain.numpy())  # the same forward ops
    expected = dy64 * slope(x64.astype(np.float32).astype(np.float64))
    # float32 round-off of the slope near its tails (tanh → ±1) is ~3e-6 of its scale, the
    # same for autodiff; the fused derivative is at least as close as autodiff is.
    scale = np.abs(expected).max()
    np.testing.assert_allclose(g_fused.numpy(), expected, rtol=0, atol=4e-6 * scale)
    np.testing.assert_allclose(g_plain.numpy(), expected, rtol=0, atol=4e-6 * scale)
    assert (np.abs(g_fused.numpy() - expected).max()
            <= 1.5 * np.abs(g_plain.numpy() - expected).max())


def test_gelu_gradient_keeps_bfloat16():
    x = tf.constant(RNG.normal(0, 2, 512), tf.bfloat16)
    dy = tf.constant(RNG.normal(0, 1, 512), tf.bfloat16)
    _, g = _grad(gelu_tanh_fused_gradient, x, dy)
    assert g.dtype == tf.bfloat16
    x64 = x.numpy().astype(np.float64)
    expected = dy.numpy().astype(np.float64) * _gelu_tanh_slope(x64)
    np.testing.assert_allclose(g.numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)


def test_other_activations_are_left_as_they_are():
    assert with_fused_gradient(gelu_tanh) is gelu_tanh_fused_gradient
    assert with_fused_gradient(gelu_exact) is gelu_exact_fused_gradient
    assert with_fused_gradient(keras.activations.relu) is keras.activations.relu


def _layer_norm_grads_numpy(x, gamma, dy):
    """dx, dγ, dβ of (x − μ)/√(σ² + ε) · γ + β over the last axis, by hand, in float64."""
    mean = x.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPSILON)
    xhat = (x - mean) * inv
    g = dy * gamma
    dx = inv * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    outer = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(outer), dy.sum(outer)


@pytest.mark.parametrize("shape", [(64, 48), (3, 5, 24)])
def test_layer_norm_gradient_matches_the_derivative_and_autodiff(shape):
    x64 = RNG.normal(1.0, 3.0, shape)
    gamma64, beta64 = RNG.normal(1, 0.2, shape[-1]), RNG.normal(0, 0.2, shape[-1])
    dy64 = RNG.normal(0, 1, shape)
    x, gamma, beta, dy = (tf.constant(v, tf.float32) for v in (x64, gamma64, beta64, dy64))

    def grads(fn):
        with tf.GradientTape() as tape:
            tape.watch([x, gamma, beta])
            y = fn(x, gamma, beta)
        return y, tape.gradient(y, [x, gamma, beta], output_gradients=dy)

    y_fused, fused = grads(lambda *a: layer_norm_fused_gradient(*a, EPSILON))
    y_plain, plain = grads(lambda x, g, b: keras.ops.layer_normalization(x, g, b, -1, EPSILON))
    np.testing.assert_array_equal(y_fused.numpy(), y_plain.numpy())
    f32 = lambda v: v.astype(np.float32).astype(np.float64)  # noqa: E731
    expected = _layer_norm_grads_numpy(f32(x64), f32(gamma64), f32(dy64))
    for name, got, auto, want in zip(("dx", "dgamma", "dbeta"), fused, plain, expected):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got.numpy(), want, atol=2e-6 * scale, rtol=0, err_msg=name)
        np.testing.assert_allclose(auto.numpy(), want, atol=2e-5 * scale, rtol=0, err_msg=name)


def test_layer_norm_layer_takes_the_fused_gradient_only_in_training():
    norm = layer_norm("layer_norm")
    x = tf.constant(RNG.normal(0, 2, (4, 6, 32)), tf.float32)
    norm.build(x.shape)
    norm.gamma.assign(RNG.normal(1, 0.1, 32))

    def step(training):
        with tf.GradientTape() as tape:
            y = norm(x, training=training)
            loss = tf.reduce_sum(y * tf.range(32, dtype=tf.float32))
        return y, tape.gradient(loss, norm.trainable_variables)

    graph = tf.function(step).get_concrete_function(True).graph
    assert any("layer_norm_backward" in f for f in _function_names(graph))
    plain_graph = tf.function(step).get_concrete_function(False).graph
    assert not any("layer_norm_backward" in f for f in _function_names(plain_graph))
    (y1, g1), (y0, g0) = step(True), step(False)
    np.testing.assert_array_equal(y1.numpy(), y0.numpy())
    for a, b in zip(g1, g0):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_layer_norm_layer_keeps_the_plain_form_for_bfloat16_input():
    norm = layer_norm("layer_norm")
    x = tf.constant(RNG.normal(0, 2, (4, 32)), tf.bfloat16)
    graph = tf.function(lambda: norm(x, training=True)).get_concrete_function().graph
    assert not any("layer_norm_backward" in f for f in _function_names(graph))
    assert norm(x, training=True).dtype == tf.float32


def _function_names(graph) -> list[str]:
    """Names of the functions a traced graph holds, its gradient functions included."""
    return [f.signature.name for f in graph.as_graph_def().library.function]
