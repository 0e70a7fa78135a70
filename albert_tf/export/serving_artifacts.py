"""The serving artifacts written beside an encoder export, and the manifest that lists them.

Inside an encoder export directory (`export_tfhub --export_path`):

    serving/                      frozen serving SavedModel (serving_graph.py), the export's dtype
    albert_encoder.tflite         --tflite_quantization: none (float32), dynamic_int8 or float16
    openvino/albert_encoder.xml   --openvino_ir: OpenVINO IR (+ .bin), float32 weights
    serving.json                  what `load_serving` needs: dtype, lengths, files

The TFLite and OpenVINO files are converted from a float32 copy of the weights whatever the
export's dtype: TFLite quantizes by its own converter, and OpenVINO picks its inference
precision when it compiles (bf16 on CPUs with bf16 units when asked, see albert_tf/serving/engines.py). The
TFLite file has a dynamic batch and a fixed sequence length (`tflite_seq_length`; TFLite's
builtin ops cannot expand the attention mask of an unknown length); the loader pads shorter
inputs with masked positions, which leaves the outputs of real tokens unchanged.

A task export (`run_classifier.py`/`run_squad.py --export_dir`; `write_task_serving_artifacts`)
holds the same `serving/` graph of the task model (its outputs: logits, probabilities,
predictions; start_logits, end_logits), in bfloat16 when the run's --dtype is, else float32;
`openvino/albert_model.xml` with --openvino_ir; and serving.json, which also lists the task's
TFLite file `albert_model.tflite` (batch 1, the original's input names `input_ids`,
`input_mask`, `segment_ids`), written as before by albert_tf/export/tflite.py.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.export import tflite
from albert_tf.serving.manifest import MANIFEST, Manifest, read_manifest, write_manifest
from albert_tf.export.parity import (BF16_RELATIVE_TOLERANCE, CONVERTED_FILE_TOLERANCE,  # noqa: F401
                                     FLOAT32_TOLERANCE, max_difference, model_tolerance)
from albert_tf.export.serving_graph import (ORIGINAL_INPUT_NAMES, SERVING_DIR, SERVING_OUTPUTS,
                                            OutputsFn, check_inputs, describe, encoder_outputs,
                                            float32_copy, frozen_serving_function,
                                            save_serving_model)
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder
from albert_tf.export.layout import (OPENVINO_DIR, OPENVINO_FILE, OPENVINO_TASK_FILE,
                                     TFLITE_ENCODER_FILE)

# The bounds of the checks below, named where they are defined (parity.py): a float32 TFLite
# file or OpenVINO IR vs its TF graph; a task export's serving graph vs its Keras model.
FLOAT_TFLITE_TOLERANCE = CONVERTED_FILE_TOLERANCE
SERVING_TOLERANCE = FLOAT32_TOLERANCE


class ServingExportError(RuntimeError):
    """A serving artifact failed its conversion or its check (one line)."""


def write_encoder_tflite(encoder: AlbertEncoder, path: str, quantization: str,
                         seq_length: int) -> dict[str, Any]:
    """Converts the frozen float32 serving graph at `[batch, seq_length]` to TFLite (quantized as
    asked), checks it on a sample and writes `path`; returns its manifest entry."""
    fn = frozen_serving_function(float32_copy(encoder), seq_length)
    try:
        content = tflite.convert(fn, quantization)
    except tflite.TFLiteExportError as error:
        raise ServingExportError(f"{path}: {error}") from None
    sample = check_inputs(encoder.config.vocab_size, 2, seq_length)
    got = tflite.signature_runner(content)(**sample)
    if not all(np.all(np.isfinite(got[name])) for name in SERVING_OUTPUTS):
        raise ServingExportError(f"{path}: the converted model's outputs are not finite on a "
                                 "sample input; nothing written")
    want = {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in sample.items()}).items()}
    difference = max_difference(got, want, relative=True, keys=SERVING_OUTPUTS)
    if quantization == "none" and not difference <= FLOAT_TFLITE_TOLERANCE:
        raise ServingExportError(f"{path}: float32 TFLite differs from the graph by "
                                 f"{difference:.3g} (relative; expected ≤ "
                                 f"{FLOAT_TFLITE_TOLERANCE})")
    with open(path, "wb") as f:  # inside the export's staging directory
        f.write(content)
    logging.info("Wrote %s (%s, seq %d, %.1f MB; max relative difference to TF %.2g)",
                 os.path.basename(path),
                 quantization, seq_length, len(content) / 2**20, difference)
    return {"file": os.path.basename(path), "quantization": quantization, "seq_length": seq_length}


def write_openvino_ir(encoder: AlbertEncoder, directory: str,
                      outputs_fn: OutputsFn = encoder_outputs,
                      file_name: str = OPENVINO_FILE) -> dict[str, Any]:
    """Converts the frozen float32 serving graph (of an encoder, or of a float32 task model with
    its `outputs_fn`) to OpenVINO IR `directory/file_name`; needs the `openvino` package
    (`pip install albert-tf[openvino]`)."""
    try:
        import openvino as ov
    except ImportError:
        raise ServingExportError("--openvino_ir needs the openvino package "
                                 "(pip install 'albert-tf[openvino]')") from None
    os.makedirs(directory, exist_ok=True)
    fn = frozen_serving_function(float32_copy(encoder), outputs_fn=outputs_fn)
    model = ov.convert_model(fn)
    for port, name in zip(model.inputs, INPUT_NAMES):  # keep our input names whatever OV infers
        if name not in port.get_names():
            port.get_tensor().set_names({name} | set(port.get_names()))
    xml = os.path.join(directory, file_name)
    ov.save_model(model, xml, compress_to_fp16=False)
    difference = _check_openvino_ir(ov, xml, fn, encoder.config.vocab_size)
    logging.info("Wrote %s (OpenVINO IR, float32 weights; max difference to TF %.2g)",
                 os.path.join(OPENVINO_DIR, file_name), difference)
    return {"file": os.path.join(OPENVINO_DIR, file_name)}


def _check_openvino_ir(ov: Any, xml: str, fn: Any, vocab_size: int) -> float:
    """The written IR on OpenVINO (f32) vs the frozen graph it came from, on a sample; raises
    ServingExportError beyond FLOAT_TFLITE_TOLERANCE (relative, float outputs)."""
    sample = check_inputs(vocab_size, 2, 16)
    want = {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in sample.items()}).items()}
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer(
        {port: sample[next(n for n in INPUT_NAMES if n in port.get_names())]
         for port in compiled.inputs})
    got = {}
    for port, value in result.items():
        name = next((n for n in want if n in port.get_names()), None)
        if name is not None and np.issubdtype(want[name].dtype, np.floating):
            got[name] = value
    difference = max_difference(got, want, relative=True, keys=got) if got else 0.0
    if not difference <= FLOAT_TFLITE_TOLERANCE:
        raise ServingExportError(f"{xml}: OpenVINO's outputs differ from the graph by "
                                 f"{difference:.3g} (relative; expected ≤ "
                                 f"{FLOAT_TFLITE_TOLERANCE})")
    return difference


def write_serving_artifacts(encoder: AlbertEncoder, export_dir: str,
                            tflite_quantization: str | None = None, tflite_seq_length: int = 128,
                            openvino_ir: bool = False,
                            int8_calibration: Sequence[dict] | None = None) -> Manifest:
    """Writes serving/, the optional TFLite and OpenVINO files and serving.json into
    `export_dir` (an existing, staged directory); returns the manifest. `int8_calibration`
    (calibration_data.read_calibration's samples) adds the static int8 IR when it passes its
    accuracy gate (int8_calibration.py)."""
    manifest = describe(encoder)
    save_serving_model(encoder, os.path.join(export_dir, SERVING_DIR))
    manifest.saved_model = SERVING_DIR
    if tflite_quantization is not None:
        if not 1 <= tflite_seq_length <= encoder.config.max_position_embeddings:
            raise ServingExportError(f"tflite_seq_length must be in [1, "
                                     f"{encoder.config.max_position_embeddings}], got "
                                     f"{tflite_seq_length}")
        manifest.tflite = write_encoder_tflite(
            encoder, os.path.join(export_dir, TFLITE_ENCODER_FILE), tflite_quantization,
            tflite_seq_length)
    if openvino_ir:
        manifest.openvino = write_openvino_ir(encoder, os.path.join(export_dir, OPENVINO_DIR))
    if int8_calibration:
        from albert_tf.export.int8_calibration import write_openvino_int8  # optional packages

        manifest.openvino_int8 = write_openvino_int8(encoder, export_dir, int8_calibration)
    write_manifest(export_dir, manifest)
    return manifest


def task_tflite_entry(quantization: str, seq_length: int) -> dict[str, Any]:
    """serving.json's entry for a task export's albert_model.tflite (tflite.py): batch 1, fixed
    length, the original's input names."""
    return {"file": tflite.TFLITE_FILE, "quantization": quantization, "seq_length": seq_length,
            "batch_size": 1,
            "inputs": {ours: theirs for theirs, ours in ORIGINAL_INPUT_NAMES.items()}}


def _check_task_serving(saved_model: str, model: Any, outputs_fn: OutputsFn,
                        seq_length: int) -> float:
    """The written serving graph vs the Keras model on a sample (float outputs; an argmax can
    flip on a near tie and is not compared); raises ServingExportError beyond the bound."""
    sample = check_inputs(model.config.vocab_size, 2, seq_length)
    want = {k: v.numpy() for k, v in outputs_fn(model(sample, training=False)).items()}
    signature = tf.saved_model.load(saved_model).signatures["serving_default"]
    got = {k: v.numpy() for k, v in signature(**{k: tf.constant(v)
                                                 for k, v in sample.items()}).items()}
    floats = [k for k in want if np.issubdtype(want[k].dtype, np.floating)]
    if sorted(got) != sorted(want) or any(got[k].dtype != np.float32 for k in floats):
        raise ServingExportError(f"{saved_model}: outputs {sorted(got)} differ in names or "
                                 f"dtypes from the model's {sorted(want)}")
    relative = str(model.compute_dtype) != "float32"
    difference = max_difference(got, want, relative, keys=floats)
    bound = model_tolerance(relative)
    if not difference <= bound:
        raise ServingExportError(f"{saved_model}: the serving graph differs from the Keras model "
                                 f"by {difference:.3g} (expected ≤ {bound:.3g}"
                                 f"{', relative' if relative else ''})")
    return difference


def write_task_serving_artifacts(model: Any, float32_model: Any, export_dir: str,
                                 outputs_fn: OutputsFn, outputs: Sequence[str], task: str,
                                 seq_length: int, tflite_entry: dict[str, Any] | None = None,
                                 openvino_ir: bool = False, onnx: bool = False,
                                 int8_calibration: Sequence[dict] | None = None,
                                 **extra: Any) -> Manifest:
    """Writes a fine-tuned task model's serving/ graph, the optional OpenVINO IR and ONNX file
    (`onnx_artifacts.write_task_onnx`) and serving.json into `export_dir` (an existing, staged directory); returns the manifest.

    `model`: the trained model; its serving graph is bfloat16 when the model computes in
    bfloat16, else `float32_model`'s (float16 has no fast CPU path; the OpenVINO IR is always
    float32 weights). `outputs_fn` maps the model's outputs to `outputs`; `seq_length` is the
    task's max_seq_length (the sample the graph is checked on); `tflite_entry`: the manifest
    entry of the TFLite file the export wrote (`task_tflite_entry`); `extra`: more manifest
    keys (e.g. the classifier's threshold); `int8_calibration`: samples for the static int8 IR
    (int8_calibration.py; kept when it passes its accuracy gate)."""
    serving_model = model if str(model.compute_dtype) == "bfloat16" else float32_model
    if str(float32_model.compute_dtype) != "float32":
        raise ValueError(f"float32_model computes in {float32_model.compute_dtype}, not float32")
    manifest = describe(serving_model)
    manifest.task, manifest.outputs, manifest.extra = task, tuple(outputs), dict(extra)
    saved_model = os.path.join(export_dir, SERVING_DIR)
    save_serving_model(serving_model, saved_model, outputs_fn)
    manifest.saved_model = SERVING_DIR
    difference = _check_task_serving(saved_model, serving_model, outputs_fn, seq_length)
    logging.info("Wrote %s (%s; max difference to the Keras model %.2g)",
                 os.path.relpath(saved_model, export_dir),
                 manifest.compute_dtype, difference)
    if tflite_entry is not None:
        manifest.tflite = dict(tflite_entry)
    if openvino_ir:
        manifest.openvino = write_openvino_ir(float32_model,
                                              os.path.join(export_dir, OPENVINO_DIR),
                                              outputs_fn, OPENVINO_TASK_FILE)
    if onnx:
        from albert_tf.export.onnx_artifacts import write_task_onnx  # optional packages

        manifest.onnx = write_task_onnx(float32_model, export_dir, outputs_fn)
    if int8_calibration:
        from albert_tf.export.int8_calibration import OPENVINO_TASK_INT8_FILE, write_openvino_int8

        manifest.openvino_int8 = write_openvino_int8(float32_model, export_dir, int8_calibration,
                                                     outputs_fn, OPENVINO_TASK_INT8_FILE)
    write_manifest(export_dir, manifest)
    return manifest


__all__ = ["MANIFEST", "Manifest", "read_manifest", "write_serving_artifacts",
           "write_task_serving_artifacts"]
