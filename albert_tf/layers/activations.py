"""Activation lookup by the original's names (faithfulness §2.8), plus the exact GELU.

The original's "gelu" is the tanh approximation (Q1). "gelu_exact" is the erf form, which
Hugging Face calls "gelu" and several released HF ALBERT configs use; we need it to load
those checkpoints with HF's outputs (the name map lives in `albert_tf.checkpoints.hf_config`).
The names are `albert_tf.config.ACTIVATION_NAMES`, which validates configs without this module.
"""

from __future__ import annotations

from typing import Callable

import keras

from albert_tf.config import ACTIVATION_NAMES


def gelu_tanh(x):
    """GELU, tanh approximation: the original's "gelu" (faithfulness Q1), not Keras' exact erf form."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU, exact: x·Φ(x) with the erf form of Φ (HF's "gelu"; not in the original release)."""
    return keras.activations.gelu(x, approximate=False)


def _identity(x):
    return x


_ACTIVATIONS: dict[str, Callable] = {
    "gelu": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": _identity,
    "": _identity,
}
# The config validates `hidden_act` against its own list: the two must name the same functions.
assert tuple(name for name in _ACTIVATIONS if name) == ACTIVATION_NAMES, "config.ACTIVATION_NAMES"


def get_activation(name: str | Callable | None) -> Callable:
    """Maps a config's `hidden_act` (case-insensitive) to a function; callables pass through."""
    if name is None:
        return _identity
    if callable(name):
        return name
    key = str(name).lower()
    if key not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of "
                         f"{', '.join(ACTIVATION_NAMES)}")
    return _ACTIVATIONS[key]
