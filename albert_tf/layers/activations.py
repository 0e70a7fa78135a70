"""Activation lookup by the original's names (spec §2.8)."""

from __future__ import annotations

from typing import Callable

import keras


def gelu_tanh(x):
    """GELU, tanh approximation: the original's "gelu" (spec Q1), not Keras' exact erf form."""
    return keras.activations.gelu(x, approximate=True)


def _identity(x):
    return x


_ACTIVATIONS: dict[str, Callable] = {
    "gelu": gelu_tanh,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": _identity,
    "": _identity,
}


def get_activation(name: str | Callable | None) -> Callable:
    """Maps a config's `hidden_act` (case-insensitive) to a function; callables pass through."""
    if name is None:
        return _identity
    if callable(name):
        return name
    key = str(name).lower()
    if key not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of gelu, relu, tanh, linear")
    return _ACTIVATIONS[key]
