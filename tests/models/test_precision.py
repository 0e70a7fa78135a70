"""Precision is passed to the models (`dtype=`), never set by swapping Keras' global policy."""

from __future__ import annotations

import ast
import pathlib
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertClassifier, AlbertPretrainer, float32_copy
from albert_tf.models.precision import build_model
from tests.conftest import random_inputs, tiny_config

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "albert_tf"
GLOBAL_SETTERS = ("set_dtype_policy", "set_global_policy")


def _dtypes(model: AlbertPretrainer, outputs: dict) -> dict:
    """What a model computes in, read from its layers, its variables and its outputs."""
    attention = model.encoder.transformer.attention_layers[0]
    return {
        "model": model.dtype_policy.compute_dtype,
        "query": attention.query.compute_dtype,
        "dropout": attention.probs_dropout.compute_dtype,
        "mlm_dense": model.mlm_head.dense.compute_dtype,
        "layer_norms": {layer.compute_dtype for layer in model._flatten_layers()
                        if isinstance(layer, keras.layers.LayerNormalization)},
        "variables": {v.dtype for v in model.variables},
        "sequence_output": model.encoder(
            {k: outputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
        )["sequence_output"].dtype,
        "mlm_logits": model(outputs)["mlm_logits"].dtype,
    }


def test_a_bf16_and_an_fp32_model_built_at_once_in_two_threads():
    """Two threads build and run their models at the same moment: each gets its own policy
    (bfloat16 compute or float32, float32 variables, float32 LayerNorms and logits), and the
    global policy is untouched."""
    config = tiny_config()
    feed = random_inputs(config)
    start = threading.Barrier(2)
    found: dict[str, dict] = {}
    errors: list[BaseException] = []

    def build(policy: str) -> None:
        try:
            start.wait(timeout=60)
            model = AlbertPretrainer(config, dtype=policy)
            found[policy] = _dtypes(model, feed)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=build, args=(p,)) for p in ("mixed_bfloat16", "float32")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for policy, compute in (("mixed_bfloat16", "bfloat16"), ("float32", "float32")):
        assert found[policy] == {
            "model": compute, "query": compute, "dropout": compute, "mlm_dense": compute,
            "layer_norms": {"float32"}, "variables": {"float32"},
            "sequence_output": tf.dtypes.as_dtype(compute), "mlm_logits": tf.float32}, policy
    assert keras.config.dtype_policy().name == "float32"


def test_without_dtype_a_model_follows_the_users_global_policy():
    """`dtype=None` keeps the global policy a user set in their own code; a task model built
    over a given encoder takes that encoder's policy."""
    config = tiny_config()
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = AlbertClassifier(config, 2)
    finally:
        keras.config.set_dtype_policy(previous)
    assert model.compute_dtype == "bfloat16"
    assert model.encoder.transformer.attention_layers[0].key.compute_dtype == "bfloat16"
    over = AlbertClassifier(config, 2, encoder=model.encoder)
    assert over.compute_dtype == "bfloat16" and over.classifier_head.compute_dtype == "float32"


def test_float32_copy_holds_the_weights_and_computes_in_float32():
    config = tiny_config()
    model = AlbertClassifier(config, 3, dtype="mixed_bfloat16")
    feed = {k: v for k, v in random_inputs(config).items() if k != "masked_lm_positions"}
    model(feed)
    copy = float32_copy(model)
    assert copy is not model and copy.compute_dtype == "float32"
    assert copy.encoder.transformer.attention_layers[0].value.compute_dtype == "float32"
    for a, b in zip(copy.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # Same weights: the copy's logits are the bf16 model's within bfloat16 rounding.
    np.testing.assert_allclose(copy(feed)["logits"], model(feed)["logits"], atol=0.05)
    assert float32_copy(copy) is copy


def test_a_fine_tuning_model_fn_builds_in_the_policy_and_copies_to_float32():
    """What a fine-tuning run does: the task's model_fn (`model_source.task_model_fn`) is given
    the policy by the Trainer; its float32 export copy is built by the same model_fn."""
    from albert_tf.model_source import task_model_fn

    config = tiny_config()
    model_fn = task_model_fn(lambda c, encoder: AlbertClassifier(c, 2, encoder=encoder), config)
    model = build_model(model_fn, "mixed_bfloat16")
    assert model.compute_dtype == "bfloat16" and model.encoder.compute_dtype == "bfloat16"
    copy = float32_copy(model, model_fn)
    assert copy.compute_dtype == "float32" and copy.encoder.compute_dtype == "float32"
    for a, b in zip(copy.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_model_fn_that_cannot_take_the_policy_is_refused_on_a_mismatch():
    config = tiny_config()
    with pytest.raises(ValueError, match="model_fn built a float32 model.*mixed_bfloat16"):
        build_model(lambda: AlbertClassifier(config, 2), "mixed_bfloat16")
    assert build_model(lambda: AlbertClassifier(config, 2), "float32").compute_dtype == "float32"
    built = build_model(lambda dtype: AlbertClassifier(config, 2, dtype=dtype), "mixed_bfloat16")
    assert built.compute_dtype == "bfloat16"


def _global_policy_calls(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in GLOBAL_SETTERS:
                calls.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{node.lineno}")
    return calls


def test_the_finder_sees_a_global_policy_call(tmp_path):
    source = tmp_path / "albert_tf" / "m.py"
    source.parent.mkdir()
    source.write_text("import keras\n\nkeras.config.set_dtype_policy('mixed_bfloat16')\n"
                      "from keras import mixed_precision\nmixed_precision.set_global_policy('x')\n")
    global PACKAGE_DIR
    saved, PACKAGE_DIR = PACKAGE_DIR, source.parent
    try:
        assert _global_policy_calls(source) == ["albert_tf/m.py:3", "albert_tf/m.py:5"]
    finally:
        PACKAGE_DIR = saved


def test_nothing_in_the_package_sets_the_global_policy():
    calls = [call for path in sorted(PACKAGE_DIR.rglob("*.py"))
             for call in _global_policy_calls(path)]
    assert not calls, calls
