"""Serving artifacts and `load_serving` (issue 21): every artifact on every installed engine
against the Keras model that made it.

Bounds: float32 artifacts equal the Keras model within 1e-5 (frozen constants and other
kernels change only the summation order); bfloat16 within 2^-5 of the outputs' largest
magnitude (the bound of tests/export/test_bfloat16_export.py, derived there); dynamic int8 keeps
a fine-tuned classifier's argmax on ≥ 99 % of a held-out set.
"""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import logging as absl_logging

from albert_tf.export import load_serving
from albert_tf.export.serving import ServingLoadError, installed
from albert_tf.export.serving_artifacts import write_serving_artifacts
from albert_tf.models.encoder import AlbertEncoder
from tests.conftest import random_inputs, tiny_config
from tests.export import finetuned
from tests.export.finetuned import argmax_agreement, fine_tuned_classifier
from tests.export.tiny_exports import export_tiny_encoder

KEYS = ("input_word_ids", "input_mask", "input_type_ids")
TOLERANCE = 1e-5
BF16_RELATIVE_TOLERANCE = 2.0 ** -5
TFLITE_SEQ = 16
ENGINES = ["tensorflow", "tflite"] + (["openvino"] if installed("openvino") else [])


def _encoder_inputs(config, batch, seq, seed=0):
    inputs = random_inputs(config, batch=batch, seq=seq, seed=seed)
    return {k: inputs[k] for k in KEYS}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny checkpoint exported by `export_tfhub` (its flags, in process) with a float32
    TFLite file and, where installed, the OpenVINO IR; and the Keras model of those weights."""
    return export_tiny_encoder(tmp_path_factory.mktemp("serving_export"),
                               tflite_quantization="none", tflite_seq_length=str(TFLITE_SEQ),
                               openvino_ir=str(installed("openvino")).lower())


@pytest.mark.parametrize("engine", ENGINES)
def test_float32_artifacts_equal_the_keras_model_on_every_engine(exported, engine):
    path, encoder = exported
    model = load_serving(path, backend=engine, num_threads=1)
    assert model.backend == engine
    for batch, seq, dtype in ((1, TFLITE_SEQ, np.int32), (4, 11, np.int64)):
        inputs = _encoder_inputs(encoder.config, batch, seq, seed=batch)
        want = encoder(inputs, training=False)
        got = model({k: v.astype(dtype) for k, v in inputs.items()})
        assert sorted(got) == ["pooled_output", "sequence_output"]
        for name in got:
            assert got[name].dtype == np.float32
            assert got[name].shape == tuple(want[name].shape)
            np.testing.assert_allclose(got[name], want[name].numpy(), atol=TOLERANCE, rtol=0)


def test_serving_graph_is_frozen_and_minimal_and_the_hub_signature_is_unchanged(exported):
    path, _ = exported
    serving = tf.saved_model.load(os.path.join(path, "serving")).signatures["serving_default"]
    assert len(serving.variables) == 0  # weights are constants
    assert sorted(serving.structured_input_signature[1]) == sorted(KEYS)  # no `training`
    assert sorted(serving.structured_outputs) == ["pooled_output", "sequence_output"]
    hub = tf.saved_model.load(path)
    assert len(hub.signatures["serving_default"].variables) > 0
    assert "encoder_outputs_1" in hub.signatures["serving_default"].structured_outputs
    assert len(hub.trainable_variables) > 0


def test_auto_names_the_engine_it_picks(exported, capfd, caplog):
    """In a plain script (no absl flags parsed) the one line goes to stderr; inside our tools,
    to absl's log."""
    path, _ = exported
    capfd.readouterr()
    model = load_serving(path, batch_size=1)
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"on {model.backend} (fp32; chosen by backend='auto'" in lines[0]
    assert (model.backend, model.precision) == (model.backend, "fp32")
    from absl import flags

    flags.FLAGS.mark_as_parsed()
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with caplog.at_level(logging.INFO):
            load_serving(path, backend="tensorflow")
    finally:
        absl_logging.set_verbosity(verbosity)
        flags.FLAGS.unparse_flags()
    lines = [r.getMessage() for r in caplog.records if "load_serving" in r.getMessage()]
    assert len(lines) == 1 and "on tensorflow (fp32)" in lines[0], lines
    assert not capfd.readouterr().err
    lite = os.path.join(path, "albert_encoder.tflite")
    assert load_serving(lite).backend == "tflite"


def test_bad_paths_engines_and_inputs_fail_with_one_clear_line(exported, tmp_path):
    path, encoder = exported
    with pytest.raises(ServingLoadError, match=r"missing_dir: does not exist; expected .*"
                                               r"saved_model\.pb.*\.tflite.*\.xml"):
        load_serving(str(tmp_path / "missing_dir"))
    with pytest.raises(ServingLoadError, match="empty: not a serving artifact"):
        os.makedirs(tmp_path / "empty")
        load_serving(str(tmp_path / "empty"))
    with pytest.raises(ServingLoadError, match="backend must be one of"):
        load_serving(path, backend="cuda")
    model = load_serving(path, backend="tflite")
    with pytest.raises(ValueError, match=f"sequence length 17 exceeds .* maximum {TFLITE_SEQ}"):
        model(_encoder_inputs(encoder.config, 1, TFLITE_SEQ + 1))
    with pytest.raises(ValueError, match="input_mask: expected int32 or int64, got float32"):
        inputs = _encoder_inputs(encoder.config, 1, 4)
        model({**inputs, "input_mask": inputs["input_mask"].astype(np.float32)})
    with pytest.raises(ValueError, match="missing inputs"):
        model({"input_word_ids": np.zeros((1, 4), np.int32)})


def test_bfloat16_serving_graph_within_the_stated_bound(tmp_path):
    """A mixed_bfloat16 encoder's serving artifacts vs the float32 model of the same weights."""
    config = tiny_config(vocab_size=1000, initializer_range=0.1)
    fp32 = AlbertEncoder(config)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        bf16 = AlbertEncoder(config)
    finally:
        keras.config.set_dtype_policy(previous)
    bf16.set_weights(fp32.get_weights())
    path = str(tmp_path / "bf16")
    os.makedirs(path)
    manifest = write_serving_artifacts(bf16, path, openvino_ir=installed("openvino"))
    assert manifest.compute_dtype == "bfloat16"
    inputs = _encoder_inputs(config, 3, 12)
    want = fp32(inputs, training=False)
    for engine in ["tensorflow"] + (["openvino"] if installed("openvino") else []):
        got = load_serving(path, backend=engine)(inputs)
        for name in ("pooled_output", "sequence_output"):
            scale = float(np.abs(want[name].numpy()).max())
            error = float(np.abs(got[name] - want[name].numpy()).max()) / scale
            assert error <= BF16_RELATIVE_TOLERANCE, (engine, name, error)
        if engine == "tensorflow":  # really bf16: not bit-equal to float32
            assert float(np.abs(got["pooled_output"] - want["pooled_output"].numpy()).max()) > 0


def test_dynamic_int8_keeps_a_fine_tuned_classifiers_argmax(tmp_path, capsys):
    classifier, dev = fine_tuned_classifier()
    path = str(tmp_path / "int8")
    os.makedirs(path)
    write_serving_artifacts(classifier.encoder, path, tflite_quantization="dynamic_int8",
                            tflite_seq_length=finetuned.SEQ)
    int8 = load_serving(path, backend="tflite")
    assert int8.artifact.tflite_quantization == "dynamic_int8"
    agreement, difference, scale = argmax_agreement(classifier, dev, int8(dev)["pooled_output"])
    with capsys.disabled():
        print(f"\nint8 encoder TFLite: argmax agreement {agreement:.4f} on {len(dev['input_mask'])}"
              f" dev rows, max |pooled int8 − fp32| = {difference:.3g} (pooled max |x| "
              f"{scale:.3g})")
    assert agreement >= finetuned.MIN_AGREEMENT
    assert 0 < difference < 0.1 * scale  # quantized, not broken


@pytest.mark.skipif(not installed("openvino"), reason="needs the optional openvino package")
def test_openvino_fuses_every_layer_norm_of_our_graph_into_one_mvn(exported):
    """The serving graph's LayerNorm form (serving_graph.engine_layer_norm) is the one OpenVINO's
    MVN fusion recognises: one MVN per LayerNorm (the embeddings' one, and two per layer
    application), no Reduce ops left. A form it does not match (Keras' own) leaves 2 Reduce +
    4 Eltwise per LayerNorm. Structure, not speed: the same on any CPU."""
    import openvino as ov

    path, encoder = exported
    config = encoder.config
    compiled = ov.Core().compile_model(os.path.join(path, "openvino", "albert_encoder.xml"),
                                       "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    kinds = [node.get_rt_info()["layerType"].astype(str)
             for node in compiled.get_runtime_model().get_ops()]
    assert kinds.count("MVN") == 1 + 2 * config.num_hidden_layers, kinds
    assert kinds.count("Reduce") == 0, kinds
