"""Serving artifacts and `load_serving` (issue 21): every artifact on every installed engine
against the Keras model that made it.

Bounds: float32 artifacts equal the Keras model within 1e-5 (frozen constants and other
kernels change only the summation order); bfloat16 within 2^-5 of the outputs' largest
magnitude (the bound of tests/export/test_bfloat16_export.py, derived there); dynamic int8 keeps
a fine-tuned classifier's argmax on ≥ 99 % of a held-out set.

The serving graph's shape (frozen, minimal), the one-line refusals of bad paths and inputs, and
OpenVINO's LayerNorm fusion are checked on test_serving_matrix.py's exports (one set of exports
for the fast tier).
"""

import logging
import os

import keras
import numpy as np
import pytest
from absl import logging as absl_logging

from albert_tf.serving import load_serving
from albert_tf.serving.loader import installed
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


def test_dynamic_int8_keeps_a_fine_tuned_classifiers_argmax(tmp_path, tmp_path_factory,
                                                            capsys):
    classifier, dev = fine_tuned_classifier(tmp_path_factory)
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
