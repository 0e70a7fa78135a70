"""Every model: `.keras` save/load round trip, and mixed precision keeping LayerNorm, softmax
and logits in float32 with outputs close to the float32 model's."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import (AlbertClassifier, AlbertEncoder, AlbertMultipleChoice,
                              AlbertPretrainer, AlbertSpanLabeler)
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def _encoder_feed(config):
    return {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}


def _span_feed(config):
    feed = _encoder_feed(config)
    p_mask = np.zeros_like(feed["input_mask"])
    p_mask[:, 1:3] = 1
    return {**feed, "p_mask": p_mask, "start_positions": None}


def _choices_feed(config):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, config.vocab_size, (2, 3, 10)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, :, 7:] = 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": (mask * 0).astype("int32")}


# name → (model factory, inputs); configs use groups and a sharing mode so that the
# serialised config must carry them.
MODELS = {
    "encoder": (AlbertEncoder, _encoder_feed),
    "pretrainer": (AlbertPretrainer, random_inputs),
    "classifier": (lambda c, **kw: AlbertClassifier(c, num_classes=3, **kw), _encoder_feed),
    "span_labeler_v1": (AlbertSpanLabeler, _encoder_feed),
    "span_labeler_v2": (lambda c, **kw: AlbertSpanLabeler(c, version_2_with_negative=True, **kw),
                        _span_feed),
    "multiple_choice": (lambda c, **kw: AlbertMultipleChoice(c, num_choices=3, **kw),
                        _choices_feed),
}


def _config():
    return tiny_config(num_hidden_layers=3, num_hidden_groups=2, cross_layer_sharing="ffn")


def _float_outputs(outputs) -> dict[str, np.ndarray]:
    """The floating outputs by key ("encoder_outputs" entries as encoder_outputs/i)."""
    flat = {}
    for key, value in outputs.items():
        for i, item in enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]:
            if item.dtype.is_floating:
                flat[key if i is None else f"{key}/{i}"] = item
    return flat


_FLOAT32: dict = {}


def float32_model(name: str):
    """(model, feed, its float outputs) of `MODELS[name]` in float32, built once per process:
    the round trip's source and the mixed-precision tests' reference."""
    if name not in _FLOAT32:
        factory, feed_fn = MODELS[name]
        config = _config()
        model = factory(config)
        feed = feed_fn(config)
        _FLOAT32[name] = (model, feed, _float_outputs(model(feed)))
    return _FLOAT32[name]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_keras_file_round_trip(tmp_path, name):
    model, feed, expected = float32_model(name)
    config = _config()
    path = tmp_path / f"{name}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model) and restored.config == config
    assert restored.get_config() == model.get_config()
    assert restored.count_params() == model.count_params()
    got = _float_outputs(restored(feed))
    assert got.keys() == expected.keys() and expected
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], atol=1e-6, err_msg=key)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_mixed_precision_keeps_float32_parts(monkeypatch, name, policy):
    factory, _ = MODELS[name]
    reference, feed, expected = float32_model(name)
    config = _config()
    softmax_dtypes = []
    softmax = keras.ops.softmax

    def recording_softmax(x, *args, **kwargs):
        softmax_dtypes.append(x.dtype)
        return softmax(x, *args, **kwargs)

    model = factory(config, dtype=policy)  # passed, not set globally
    model(feed)
    model.set_weights(reference.get_weights())
    monkeypatch.setattr(keras.ops, "softmax", recording_softmax)
    out = _float_outputs(model(feed))
    assert model.dtype_policy.name == policy and keras.config.dtype_policy().name == "float32"
    half = policy.split("_")[1]
    layer_norms = [layer for layer in model._flatten_layers()
                   if isinstance(layer, keras.layers.LayerNormalization)]
    assert layer_norms and all(layer.compute_dtype == "float32" for layer in layer_norms)
    assert softmax_dtypes and all(dtype == tf.float32 for dtype in softmax_dtypes)  # attention
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    assert encoder.transformer.attention_layers[0].query.compute_dtype == half
    assert all(w.dtype == "float32" for w in model.weights)
    for key, value in out.items():
        # The encoder hands its outputs on in the compute dtype; every head's logits (and
        # the v2 head's log-probabilities) are float32.
        assert value.dtype == (half if name == "encoder" else tf.float32), key
        kept = np.abs(expected[key]) < 1e4  # not the v2 head's −1e30 masked entries
        error = np.abs(np.asarray(tf.cast(value, tf.float32)) - expected[key])[kept]
        scale = max(1.0, float(np.abs(expected[key][kept]).max()))
        assert float(error.max()) < 3e-2 * scale, (key, float(error.max()))
