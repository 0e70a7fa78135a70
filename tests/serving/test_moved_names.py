"""The serving package stands apart from the export writers, and every name that moved out of
albert_tf.export (and training.frozen_weights) still resolves for one release, to the same
object, with one DeprecationWarning naming its new home."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings

import pytest

# The writers a server must not import, and the packages only they need.
WRITERS = ("albert_tf.export", "albert_tf.export.tflite", "albert_tf.export.onnx_artifacts",
           "albert_tf.export.onnx_graph", "albert_tf.export.int8_calibration",
           "albert_tf.export.tfhub", "albert_tf.export.serving_graph",
           "albert_tf.export.serving_artifacts", "albert_tf.export.encoder_export",
           "albert_tf.export.preprocessing", "albert_tf.training", "nncf", "tf2onnx",
           "tensorflow_hub")

MOVED_MODULES = {
    "albert_tf.export.serving": "albert_tf.serving.loader",
    "albert_tf.export.engines": "albert_tf.serving.engines",
    "albert_tf.export.auto_rule": "albert_tf.serving.auto_rule",
    "albert_tf.export.artifact": "albert_tf.serving.artifact",
    "albert_tf.export.manifest": "albert_tf.serving.manifest",
    "albert_tf.export.file_precision": "albert_tf.serving.file_precision",
    "albert_tf.export.float32_graph": "albert_tf.serving.float32_graph",
    "albert_tf.export.loading": "albert_tf.checkpoints.encoder_exports",
    "albert_tf.training.frozen_weights": "albert_tf.models.frozen_weights",
}
MOVED_NAMES = {
    "load_serving": "albert_tf.serving.loader",
    "HubEncoder": "albert_tf.checkpoints.encoder_exports",
    "load_keras_encoder": "albert_tf.checkpoints.encoder_exports",
    "is_encoder_export": "albert_tf.checkpoints.encoder_exports",
    "load_export_config": "albert_tf.checkpoints.encoder_exports",
}


def test_a_server_imports_no_export_writer():
    """`from albert_tf.serving import load_serving`, in a fresh interpreter, leaves every writer
    module (and the packages only writers use) unimported."""
    code = ("import json, sys\n"
            "from albert_tf.serving import load_serving, ENGINES, Artifact\n"
            f"print(json.dumps(sorted(m for m in {list(WRITERS)!r} if m in sys.modules)))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def _deprecations(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught
            if issubclass(w.category, DeprecationWarning) and "albert_tf" in str(w.message)]


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_a_moved_module_is_the_new_one_and_warns_once(old, new):
    module = importlib.import_module(new)
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alias = importlib.import_module(old)
        again = importlib.import_module(old)  # cached: no second warning
    assert alias is module and again is module
    messages = _deprecations(caught)
    assert len(messages) == 1 and new in messages[0], messages


@pytest.mark.parametrize("name, new", sorted(MOVED_NAMES.items()))
def test_a_moved_name_resolves_to_the_same_object_and_warns(name, new):
    import albert_tf.export

    expected = getattr(importlib.import_module(new), name)
    vars(albert_tf.export).pop(name, None)  # an earlier use keeps it (and warned then)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scope: dict = {}
        exec(f"from albert_tf.export import {name} as got", scope)  # looks the name up twice
        again = getattr(albert_tf.export, name)
    assert scope["got"] is expected and again is expected
    messages = _deprecations(caught)
    assert len(messages) == 1 and new.rpartition(".")[0] in messages[0], messages
    assert name not in albert_tf.export.__all__


def test_the_export_dtypes_are_the_training_ones():
    """checkpoints/encoder_export_files.py says the export dtypes a floor below training's
    table; they must stay the same policies."""
    from albert_tf.checkpoints.encoder_export_files import EXPORT_DTYPE_POLICIES
    from albert_tf.training.choices import DTYPE_POLICIES

    assert EXPORT_DTYPE_POLICIES.items() <= DTYPE_POLICIES.items()
    assert set(EXPORT_DTYPE_POLICIES) == {"float32", "bfloat16"}
