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


def test_the_config_accepts_exactly_the_activations_the_layers_implement():
    """config.py validates `hidden_act` without importing the layers: its name list and the
    layers' table must agree, both ways."""
    from albert_tf.config import ACTIVATION_NAMES, AlbertConfig, ConfigError

    x = np.array([-1.0, 2.0], "float32")
    for name in ACTIVATION_NAMES:
        AlbertConfig(vocab_size=10, hidden_act=name.upper())  # case-insensitive, as the lookup
        assert np.asarray(get_activation(name)(x)).shape == (2,)
    for name in ("swishy", "gelu_new", "silu"):
        with pytest.raises(ConfigError, match="field 'hidden_act': unknown activation"):
            AlbertConfig(vocab_size=10, hidden_act=name)
        with pytest.raises(ValueError, match="unknown activation"):
            get_activation(name)
