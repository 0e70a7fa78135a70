"""The training forms of GELU and LayerNorm (albert_tf.layers.fused_gradients): forward values
and gradients equal to float64 NumPy references of the formulas, and to TensorFlow's own ops
and autodiff, within float32 round-off; in bfloat16, one rounding of the float32 value."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.layers import gelu_exact, gelu_tanh, layer_norm
from albert_tf.layers.fused_gradients import (
    gelu_exact_fused_gradient, gelu_tanh_fused_gradient, layer_norm_fused_gradient,
    residual_layer_norm_fused, with_fused_gradient)

EPSILON = 1e-12
RNG = np.random.default_rng(7)
F32_EPS = float(np.finfo(np.float32).eps)
BF16_HALF_ULP = 2.0 ** -8  # relative bound: bfloat16 keeps 8 significant bits


def _gelu_tanh_value(x: np.ndarray) -> np.ndarray:
    """x/2 · (1 + tanh(√(2/π)(x + 0.044715 x³))), in float64."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_exact_value(x: np.ndarray) -> np.ndarray:
    """x · Φ(x), in float64."""
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


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


@pytest.mark.parametrize("plain, fused, value, slope", [
    (gelu_tanh, gelu_tanh_fused_gradient, _gelu_tanh_value, _gelu_tanh_slope),
    (gelu_exact, gelu_exact_fused_gradient, _gelu_exact_value, _gelu_exact_slope),
])
def test_gelu_forward_and_gradient_match_the_formula_and_autodiff(plain, fused, value, slope):
    x64 = np.concatenate([RNG.normal(0, 3, 4000), np.linspace(-12, 12, 97)])
    dy64 = RNG.normal(0, 1, x64.shape)
    x, dy = tf.constant(x64, tf.float32), tf.constant(dy64, tf.float32)
    y_fused, g_fused = _grad(fused, x, dy)
    y_plain, g_plain = _grad(plain, x, dy)
    x32 = x64.astype(np.float32).astype(np.float64)
    # The forward: float32 round-off of x/2 · (1 + t) is a few ulps of |x| (1 + t cancels
    # where t → −1), for TensorFlow's ops as for the fused kernel.
    y_expected, ulps = value(x32), 4 * F32_EPS * np.maximum(np.abs(x32), 1e-3)
    assert np.all(np.abs(y_fused.numpy() - y_expected) <= ulps)
    assert np.all(np.abs(y_plain.numpy() - y_expected) <= ulps)
    expected = dy64 * slope(x32)
    # float32 round-off of the slope near its tails (tanh → ±1) is ~3e-6 of its scale, the
    # same for autodiff; the fused derivative is at least as close as autodiff is.
    scale = np.abs(expected).max()
    np.testing.assert_allclose(g_fused.numpy(), expected, rtol=0, atol=4e-6 * scale)
    np.testing.assert_allclose(g_plain.numpy(), expected, rtol=0, atol=4e-6 * scale)
    assert (np.abs(g_fused.numpy() - expected).max()
            <= 1.5 * np.abs(g_plain.numpy() - expected).max())


def test_gelu_keeps_bfloat16_with_one_rounding():
    x = tf.constant(RNG.normal(0, 2, 4096), tf.bfloat16)
    dy = tf.constant(RNG.normal(0, 1, 4096), tf.bfloat16)
    y, g = _grad(gelu_tanh_fused_gradient, x, dy)
    assert y.dtype == g.dtype == tf.bfloat16
    x64 = x.numpy().astype(np.float64)
    # Computed in float32, rounded once: within half a bf16 ulp (plus float32 round-off) of the
    # exact value, and closer than TensorFlow's bf16 ops, which round after every op.
    y_expected = _gelu_tanh_value(x64)
    error = np.abs(y.numpy().astype(np.float64) - y_expected)
    assert np.all(error <= BF16_HALF_ULP * np.abs(y_expected) + 8 * F32_EPS * np.abs(x64) + 1e-30)
    plain_error = np.abs(gelu_tanh(x).numpy().astype(np.float64) - y_expected)
    assert error.sum() < plain_error.sum()
    expected = dy.numpy().astype(np.float64) * _gelu_tanh_slope(x64)
    np.testing.assert_allclose(g.numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)


def test_other_activations_are_left_as_they_are():
    assert with_fused_gradient(gelu_tanh) is gelu_tanh_fused_gradient
    assert with_fused_gradient(gelu_exact) is gelu_exact_fused_gradient
    assert with_fused_gradient(keras.activations.relu) is keras.activations.relu


def _layer_norm_numpy(x, gamma, beta):
    """(x − μ)/√(σ² + ε) · γ + β over the last axis, in float64."""
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPSILON) * gamma + beta


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
    f32 = lambda v: v.astype(np.float32).astype(np.float64)  # noqa: E731
    y_expected = _layer_norm_numpy(f32(x64), f32(gamma64), f32(beta64))
    y_scale = np.abs(y_expected).max()
    np.testing.assert_allclose(y_fused.numpy(), y_expected, rtol=0, atol=1e-6 * y_scale)
    np.testing.assert_allclose(y_plain.numpy(), y_expected, rtol=0, atol=1e-6 * y_scale)
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
    np.testing.assert_allclose(y1.numpy(), y0.numpy(), rtol=0, atol=2e-6)
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


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_residual_layer_norm_matches_the_formula_and_its_derivative(dtype):
    shape = (6, 10, 40)
    out64, res64, dy64 = (RNG.normal(0.5, 2.0, shape) for _ in range(3))
    gamma64, beta64 = RNG.normal(1, 0.2, shape[-1]), RNG.normal(0, 0.2, shape[-1])
    out, res, dy = (tf.constant(v, dtype) for v in (out64, res64, dy64))
    gamma, beta = tf.constant(gamma64, tf.float32), tf.constant(beta64, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([out, res, gamma, beta])
        y = residual_layer_norm_fused(out, res, gamma, beta, EPSILON)
    grads = tape.gradient(y, [out, res, gamma, beta], output_gradients=dy)
    assert y.dtype == dtype and [g.dtype for g in grads] == [dtype, dtype, tf.float32, tf.float32]
    as64 = lambda t: t.numpy().astype(np.float64)  # noqa: E731  the values the kernel was given
    x = as64(out) + as64(res)
    g32 = gamma64.astype(np.float32).astype(np.float64)
    b32 = beta64.astype(np.float32).astype(np.float64)
    y_expected = _layer_norm_numpy(x, g32, b32)
    dx, dgamma, dbeta = _layer_norm_grads_numpy(x, g32, as64(dy))
    # float32: round-off; bfloat16: the result and dx rounded once to bf16.
    rel = 4e-6 if dtype == tf.float32 else BF16_HALF_ULP + 4e-6
    np.testing.assert_allclose(as64(y), y_expected, rtol=rel, atol=4e-6)
    for name, got, want in (("d out", grads[0], dx), ("d residual", grads[1], dx)):
        np.testing.assert_allclose(as64(got), want, rtol=rel,
                                   atol=4e-6 * np.abs(want).max(), err_msg=name)
    for name, got, want in (("d gamma", grads[2], dgamma), ("d beta", grads[3], dbeta)):
        np.testing.assert_allclose(as64(got), want, rtol=0, atol=4e-6 * np.abs(want).max(),
                                   err_msg=name)


def test_residual_layer_norm_of_the_layer_fuses_only_in_training():
    norm = layer_norm("layer_norm")
    norm.build((None, 32))
    norm.gamma.assign(RNG.normal(1, 0.1, 32))
    out, res = (tf.constant(RNG.normal(0, 2, (8, 32)), tf.bfloat16) for _ in range(2))

    def names(training):
        fn = tf.function(lambda: norm.residual(out, res, "bfloat16", training))
        return _function_names(fn.get_concrete_function().graph)

    assert any("residual_layer_norm_forward" in f for f in names(True))
    assert not any("residual_layer_norm" in f for f in names(False))
    y_train = norm.residual(out, res, "bfloat16", True)
    y_plain = norm.residual(out, res, "bfloat16", False)
    assert y_train.dtype == y_plain.dtype == tf.bfloat16
    # The same float32 value (round-off apart) rounded once to bf16: at most one bf16 ulp apart.
    np.testing.assert_allclose(y_train.numpy().astype(np.float32),
                               y_plain.numpy().astype(np.float32), rtol=2 * BF16_HALF_ULP,
                               atol=1e-6)
