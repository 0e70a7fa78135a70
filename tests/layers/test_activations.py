"""The original's "gelu" is the tanh approximation (faithfulness §2.8, Q1)."""

import math

import numpy as np
import pytest

from albert_tf.layers import get_activation


def test_gelu_is_the_tanh_form():
    x = np.linspace(-6, 6, 101).astype("float32")
    expected = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in x]
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    got = np.asarray(get_activation("GELU")(x))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert np.abs(got - np.asarray(exact)).max() > 1e-4  # not the erf form


def test_other_names_and_errors():
    x = np.array([-1.0, 2.0], "float32")
    np.testing.assert_allclose(get_activation("relu")(x), [0, 2])
    np.testing.assert_allclose(get_activation("linear")(x), x)
    np.testing.assert_allclose(get_activation("tanh")(x), np.tanh(x), atol=1e-6)
    with pytest.raises(ValueError, match="unknown activation"):
        get_activation("swishy")


def test_gelu_exact_is_the_erf_form():
    """HF's "gelu" (our "gelu_exact"), which several released HF ALBERT configs use."""
    x = np.linspace(-6, 6, 101).astype("float32")
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(get_activation("gelu_exact")(x), exact, atol=1e-6)
