"""Serving artifacts and `load_serving` (issue 21): the line `auto` writes, and dynamic int8
keeping a fine-tuned classifier's argmax on ≥ 99 % of a held-out set.

Every artifact on every engine and precision against the Keras model that made it (float32
within 1e-5, bfloat16 within 2^-5 of the outputs' largest magnitude), the serving graph's shape
(frozen, minimal), the one-line refusals of bad paths and inputs, and OpenVINO's LayerNorm
fusion are checked on test_serving_matrix.py's exports (one set of exports for the whole run).
This file's own float32 export and bf16 serving-graph test were removed for the 20-minute
`make test-all` (they repeated the matrix's fp32 and bf16 cells on an export built for them).
"""

import logging
import os

from absl import logging as absl_logging

from albert_tf.serving import load_serving
from albert_tf.export.serving_artifacts import write_serving_artifacts
from tests.export import finetuned
from tests.export.finetuned import argmax_agreement, fine_tuned_classifier
from tests.export.tiny_exports import shared_export

def test_auto_names_the_engine_it_picks(tmp_path_factory, capfd, caplog):
    """In a plain script (no absl flags parsed) the one line goes to stderr; inside our tools,
    to absl's log. (On the serving matrix's float32 export with every artifact.)"""
    path, _ = shared_export(tmp_path_factory, "fp32_full")
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
