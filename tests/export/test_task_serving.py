"""Serving artifacts of the task exports (issue 21): a fine-tuned classifier's and a SQuAD v1
span labeler's `--export_dir` also hold the frozen `serving/` graph, optionally the OpenVINO IR,
and serving.json; `load_serving(export_dir)` runs them on every engine with an artifact there,
giving the task's outputs — checked against the Keras task model that was exported.

Bounds, as tests/export/test_serving.py for the encoder: float32 artifacts within 1e-5 of the
Keras model; bfloat16 within 2^-5 of each output's largest magnitude; dynamic int8 keeps a
fine-tuned classifier's argmax on ≥ 99 % of a held-out set.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.runtime import hardware
from albert_tf.serving import load_serving
from albert_tf.export.layout import MANIFEST, SERVING_DIR, TASK_SAVED_MODEL_DIR
from albert_tf.serving.loader import installed
from albert_tf.export.tflite import TFLITE_FILE
from albert_tf.glue.export import CLASSIFIER_OUTPUTS, export_classifier
from albert_tf.models import AlbertClassifier
from albert_tf.models.span_labeler import AlbertSpanLabeler
from albert_tf.squad.export import SQUAD_OUTPUTS, export_squad_v1
from tests.conftest import random_inputs, tiny_config
from tests.export.finetuned import SEQ as FINETUNED_SEQ, fine_tuned_classifier

KEYS = ("input_word_ids", "input_mask", "input_type_ids")
TOLERANCE = 1e-5
BF16_RELATIVE_TOLERANCE = 2.0 ** -5
SEQ = 16  # the task's max_seq_length (the TFLite file's fixed length)
# --onnx: tf2onnx's conversion of serving/, on ONNX Runtime (the [onnx] extra).
ONNX = installed("onnxruntime") and installed("tf2onnx")
ENGINES = (["tensorflow", "tflite"] + (["openvino"] if installed("openvino") else [])
           + (["onnxruntime"] if ONNX else []))
CASES = ((1, SEQ, np.int32), (3, 11, np.int64))  # batch, seq (≤ SEQ for TFLite), input dtype


def _inputs(config, batch, seq, seed=0):
    inputs = random_inputs(config, batch=batch, seq=seq, seed=seed)
    return {k: inputs[k] for k in KEYS}


def _bf16_copy(model_fn, fp32: keras.Model) -> keras.Model:
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        copy = model_fn()
    finally:
        keras.config.set_dtype_policy(previous)
    copy.set_weights(fp32.get_weights())
    return copy


@pytest.fixture(scope="module")
def classifier_export(tmp_path_factory):
    """A tiny 3-class classifier (initializer_range 0.1: distinct logits) exported with a
    float32 TFLite file, a threshold and, where installed, the OpenVINO IR."""
    keras.utils.set_random_seed(5)
    model = AlbertClassifier(tiny_config(vocab_size=1000, initializer_range=0.1), 3)
    path = str(tmp_path_factory.mktemp("classifier") / "export")
    export_classifier(model, path, SEQ, is_regression=False, threshold_to_export=0.5,
                      tflite_model=model, openvino_ir=installed("openvino"), onnx=ONNX)
    return path, model


@pytest.fixture(scope="module")
def squad_export(tmp_path_factory):
    keras.utils.set_random_seed(6)
    model = AlbertSpanLabeler(tiny_config(vocab_size=1000, initializer_range=0.1))
    path = str(tmp_path_factory.mktemp("squad") / "export")
    export_squad_v1(model, path, SEQ, 1000, openvino_ir=installed("openvino"), onnx=ONNX)
    return path, model


@pytest.mark.parametrize("engine", ENGINES)
def test_classifier_export_equals_the_keras_model_on_every_engine(classifier_export, engine):
    path, model = classifier_export
    served = load_serving(path, backend=engine, num_threads=1)
    assert served.backend == engine
    for batch, seq, dtype in CASES:
        inputs = _inputs(model.config, batch, seq, seed=batch)
        logits = model(inputs, training=False)["logits"].numpy()
        got = served({k: v.astype(dtype) for k, v in inputs.items()})
        assert sorted(got) == sorted(CLASSIFIER_OUTPUTS)
        np.testing.assert_allclose(got["logits"], logits, atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(got["probabilities"], tf.nn.softmax(logits).numpy(),
                                   atol=TOLERANCE, rtol=0)
        assert got["logits"].dtype == np.float32 and got["predictions"].dtype == np.int32
        np.testing.assert_array_equal(got["predictions"], logits.argmax(-1))


@pytest.mark.parametrize("engine", ENGINES)
def test_squad_export_equals_the_keras_model_on_every_engine(squad_export, engine):
    path, model = squad_export
    served = load_serving(path, backend=engine, num_threads=1)
    for batch, seq, dtype in CASES:
        inputs = _inputs(model.config, batch, seq, seed=batch)
        want = model(inputs, training=False)
        got = served({k: v.astype(dtype) for k, v in inputs.items()})
        assert sorted(got) == sorted(SQUAD_OUTPUTS)
        for name in SQUAD_OUTPUTS:
            assert got[name].shape == (batch, seq) and got[name].dtype == np.float32
            np.testing.assert_allclose(got[name], want[name].numpy(), atol=TOLERANCE, rtol=0)


def test_the_original_signature_and_tflite_file_are_kept_beside_the_new_artifacts(
        classifier_export, squad_export):
    path, model = classifier_export
    assert not {"saved_model.pb", "variables"} & set(os.listdir(path))  # under saved_model/
    with open(os.path.join(path, "serving.json")) as f:
        manifest = json.load(f)
    assert manifest["task"] == "classifier" and manifest["compute_dtype"] == "float32"
    assert manifest["outputs"] == list(CLASSIFIER_OUTPUTS) and manifest["threshold"] == 0.5
    assert manifest["tflite"] == {"file": TFLITE_FILE, "quantization": "none", "seq_length": SEQ,
                                  "batch_size": 1, "inputs": {"input_word_ids": "input_ids",
                                                              "input_mask": "input_mask",
                                                              "input_type_ids": "segment_ids"}}
    assert ("openvino" in manifest) == installed("openvino")
    assert manifest.get("onnx") == ({"file": "onnx/albert_model.onnx"} if ONNX else None)
    # The original's serving input (serialized tf.Examples) and output names are unchanged.
    signature = tf.saved_model.load(os.path.join(path, TASK_SAVED_MODEL_DIR)).signatures[
        "serving_default"]
    assert list(signature.structured_input_signature[1]) == ["examples"]
    assert sorted(signature.structured_outputs) == ["predictions", "probabilities", "threshold"]
    # The serving graph: token inputs, the task's outputs, no variables, no `training`.
    serving = tf.saved_model.load(os.path.join(path, "serving")).signatures["serving_default"]
    assert len(serving.variables) == 0
    assert sorted(serving.structured_input_signature[1]) == sorted(KEYS)
    assert sorted(serving.structured_outputs) == sorted(CLASSIFIER_OUTPUTS)
    squad_path, _ = squad_export
    # One layout for both tasks (layout.py).
    for export in (path, squad_path):
        assert {TASK_SAVED_MODEL_DIR, TFLITE_FILE, SERVING_DIR, MANIFEST} <= set(os.listdir(export))
    # A task's albert_model.tflite loads on its own too (the original's input names mapped).
    lite = load_serving(os.path.join(path, TFLITE_FILE))
    inputs = _inputs(model.config, 2, 9)
    np.testing.assert_allclose(lite(inputs)["logits"], model(inputs, training=False)["logits"],
                               atol=TOLERANCE, rtol=0)


def test_auto_picks_by_the_table_for_a_float32_task_export_in_one_line(classifier_export, capfd,
                                                                       monkeypatch):
    """On an AVX2 CPU (mocked): the task's batch-1 TFLite file cannot take the export's longest
    input, so auto takes the table's next engine with a file here, the ONNX file on ONNX
    Runtime (TensorFlow without --onnx), and says so in one line."""
    path, _ = classifier_export
    # An AVX2 CPU without VNNI (mocked): its profile and its int8 file both follow the flags.
    avx2 = hardware.cpu_flags("flags : fpu sse2 avx avx2 fma")
    monkeypatch.setattr(hardware, "cpu_flags", lambda *a, **k: avx2)
    capfd.readouterr()
    served = load_serving(path)
    expected = "onnxruntime" if ONNX else "tensorflow"
    assert served.backend == expected
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "auto" in lines[0], lines


def test_bfloat16_classifier_export_within_the_stated_bound(tmp_path):
    """Under --dtype=bfloat16 the runner hands the export the bf16 model and a float32 copy:
    serving/ computes in bfloat16, the TFLite file stays float32."""
    keras.utils.set_random_seed(7)
    config = tiny_config(vocab_size=1000, initializer_range=0.1)
    fp32 = AlbertClassifier(config, 3)
    bf16 = _bf16_copy(lambda: AlbertClassifier(config, 3), fp32)
    path = str(tmp_path / "export")
    export_classifier(bf16, path, SEQ, is_regression=False, tflite_model=fp32)
    with open(os.path.join(path, "serving.json")) as f:
        assert json.load(f)["compute_dtype"] == "bfloat16"
    inputs = _inputs(config, 3, 12)
    want = fp32(inputs, training=False)["logits"].numpy()
    got = load_serving(path, backend="tensorflow")(inputs)["logits"]
    error = float(np.abs(got - want).max()) / float(np.abs(want).max())
    assert 0 < error <= BF16_RELATIVE_TOLERANCE, error  # really bf16, within the bound
    lite = load_serving(path, backend="tflite")(inputs)["logits"]
    np.testing.assert_allclose(lite, want, atol=TOLERANCE, rtol=0)
    if installed("openvino"):  # no --openvino_ir: OpenVINO reads the bf16 graph (issue 27)
        for precision in ("bf16", "fp32"):
            served = load_serving(path, backend="openvino", precision=precision)
            got = served(inputs)["logits"]
            error = float(np.abs(got - want).max()) / float(np.abs(want).max())
            assert error <= BF16_RELATIVE_TOLERANCE, (precision, error)


def test_bfloat16_squad_export_within_the_stated_bound(tmp_path):
    keras.utils.set_random_seed(8)
    config = tiny_config(vocab_size=1000, initializer_range=0.1)
    fp32 = AlbertSpanLabeler(config)
    bf16 = _bf16_copy(lambda: AlbertSpanLabeler(config), fp32)
    path = str(tmp_path / "export")
    export_squad_v1(fp32, path, SEQ, config.vocab_size, trained_model=bf16)
    inputs = _inputs(config, 2, 10)
    want = fp32(inputs, training=False)
    for engine in ["tensorflow"] + (["openvino"] if installed("openvino") else []):
        got = load_serving(path, backend=engine)(inputs)
        for name in SQUAD_OUTPUTS:
            error = float(np.abs(got[name] - want[name].numpy()).max()) \
                / float(np.abs(want[name].numpy()).max())
            assert 0 < error <= BF16_RELATIVE_TOLERANCE, (engine, name, error)


def test_dynamic_int8_task_export_keeps_a_fine_tuned_classifiers_argmax(
        tmp_path, tmp_path_factory, capsys):
    """The classifier fine-tuned in the test (the encoder test's bag-of-words task), exported with
    tflite_quantization=dynamic_int8: load_serving's TFLite engine predicts its class on ≥ 99 %
    of 400 held-out rows."""
    # > 90 % training accuracy, 400 held-out rows
    classifier, dev = fine_tuned_classifier(tmp_path_factory)
    path = str(tmp_path / "int8")
    export_classifier(classifier, path, FINETUNED_SEQ, is_regression=False,
                      tflite_quantization="dynamic_int8")
    int8 = load_serving(path, backend="tflite")
    assert int8.artifact.tflite_quantization == "dynamic_int8"
    got = int8(dev)
    want = classifier(dev, training=False)["logits"].numpy()
    agreement = float(np.mean(got["predictions"] == want.argmax(-1)))
    difference = float(np.abs(got["logits"] - want).max())
    with capsys.disabled():
        print(f"\nint8 classifier export (TFLite): argmax agreement {agreement:.4f} on "
              f"{len(want)} dev rows, max |logits int8 − fp32| = {difference:.3g} (logits max "
              f"|x| {np.abs(want).max():.3g})")
    assert agreement >= 0.99
    assert 0 < difference < 0.1 * float(np.abs(want).max())  # quantized, not broken


def test_the_loaders_copy_of_the_original_input_names_is_the_records_mapping():
    """serving_graph.ORIGINAL_INPUT_NAMES (the loader's name for models.encoder.FEATURE_TO_INPUT)
    and the records' mapping are the same: a task export's TFLite names are the records' names."""
    from albert_tf.export.serving_graph import ORIGINAL_INPUT_NAMES
    from albert_tf.finetuning.records import FEATURE_TO_INPUT

    assert ORIGINAL_INPUT_NAMES == FEATURE_TO_INPUT
