"""Precision passed, not swapped: the models' `dtype=` policy, and their float32 copies.

A model takes `dtype=` (a Keras `DTypePolicy` or its name, as keras-hub's models do) and hands
it to every layer, so two models of different precision can be built at once, in two threads,
without touching `keras.config`'s global policy (which every thread shares, and which leaks
when an exception escapes between a set and its restore). `dtype=None` keeps the global
policy: a user's own `keras.config.set_dtype_policy` still applies.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import keras

FLOAT32 = "float32"


def policy_of(dtype: Any = None, like: Any = None) -> keras.DTypePolicy:
    """The policy `dtype` names; when None, `like`'s (a task model takes its given encoder's
    precision), else the global policy."""
    if dtype is not None:
        return keras.dtype_policies.get(dtype)
    if like is not None and hasattr(like, "dtype_policy"):
        return like.dtype_policy
    return keras.config.dtype_policy()


def model_config(model: keras.Model, **fields: Any) -> dict[str, Any]:
    """The `get_config` of our models: name, trainable, the AlbertConfig, the model's own
    `fields` and its policy (so a `.keras` file reloads in the precision it was saved in)."""
    return {"name": model.name, "trainable": model.trainable, "config": model.config.to_dict(),
            **fields, "dtype": keras.dtype_policies.serialize(model.dtype_policy)}


def takes_dtype(model_fn: Callable[..., Any]) -> bool:
    """True when `model_fn` accepts a `dtype` argument (a model builder that is passed the
    policy); a zero-argument builder is not."""
    try:
        parameters = inspect.signature(model_fn).parameters
    except (TypeError, ValueError):
        return False
    return "dtype" in parameters or any(
        p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in parameters.values())


def build_model(model_fn: Callable[..., keras.Model], dtype: Any) -> keras.Model:
    """`model_fn(dtype=policy)`: the model built under `dtype`'s policy. A zero-argument
    `model_fn` is called as it is, and refused (ValueError) when its model's compute dtype is
    not the one asked for: it cannot be told the policy."""
    policy = keras.dtype_policies.get(dtype)
    if takes_dtype(model_fn):
        return model_fn(dtype=policy)
    model = model_fn()
    if model.dtype_policy.compute_dtype != policy.compute_dtype:
        raise ValueError(
            f"model_fn built a {model.dtype_policy.compute_dtype} model but the policy asked for "
            f"is {policy.name}: give model_fn a `dtype` argument and pass it to the model "
            f"(e.g. lambda dtype: AlbertPretrainer(config, dtype=dtype))")
    return model


def float32_copy(model: keras.Model,
                 build: Callable[..., keras.Model] | None = None) -> keras.Model:
    """`model` itself when it computes in float32, else a float32 model holding its current
    weights: the model of the float exports (TFLite has no bfloat16 kernels; the OpenVINO and
    ONNX converters quantize from float32). The copy is `build(dtype="float32")`, by default
    `model`'s class from its config (a model whose encoder is an export passes its builder)."""
    if model.dtype_policy.compute_dtype == FLOAT32:
        return model
    if build is None:
        def build(dtype):
            return type(model).from_config({**model.get_config(), "dtype": dtype})
    copy = build_model(build, FLOAT32)
    copy.set_weights(model.get_weights())
    return copy
