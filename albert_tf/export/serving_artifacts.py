"""The serving artifacts written beside an encoder export, and the manifest that lists them.

Inside an encoder export directory (`export_tfhub --export_path`):

    serving/                      frozen serving SavedModel (serving_graph.py), the export's dtype
    albert_encoder.tflite         --tflite_quantization: none (float32), dynamic_int8 or float16
    openvino/albert_encoder.xml   --openvino_ir: OpenVINO IR (+ .bin), float32 weights
    serving.json                  what `load_serving` needs: dtype, lengths, files

The TFLite and OpenVINO files are converted from a float32 copy of the weights whatever the
export's dtype: TFLite quantizes by its own converter, and OpenVINO picks its inference
precision when it compiles (bf16 on CPUs with bf16 units when asked, see serving.py). The
TFLite file has a dynamic batch and a fixed sequence length (`tflite_seq_length`; TFLite's
builtin ops cannot expand the attention mask of an unknown length); the loader pads shorter
inputs with masked positions, which leaves the outputs of real tokens unchanged.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.export import tflite
from albert_tf.export.serving_graph import (SERVING_DIR, SERVING_OUTPUTS, describe, float32_copy,
                                            frozen_serving_function, save_serving_model)
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder

MANIFEST = "serving.json"
TFLITE_ENCODER_FILE = "albert_encoder.tflite"
OPENVINO_DIR = "openvino"
OPENVINO_FILE = "albert_encoder.xml"
# Max |TFLite − TF| on the check input of a float32 file, relative to the outputs' magnitude.
# Quantized files are only checked for finite outputs (their error is the quantization's).
FLOAT_TFLITE_TOLERANCE = 1e-4


class ServingExportError(RuntimeError):
    """A serving artifact failed its conversion or its check (one line)."""


def check_inputs(vocab_size: int, batch: int, seq_length: int) -> dict[str, np.ndarray]:
    """Deterministic int32 inputs, the last rows padded, two segments."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab_size, (batch, seq_length)).astype(np.int32)
    mask = np.ones_like(ids)
    for row in range(1, batch):
        mask[row, seq_length - seq_length // (row + 2):] = 0
    types = np.zeros_like(ids)
    types[:, seq_length // 2:] = 1
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types * mask}


def _relative_difference(got: dict, want: dict) -> float:
    return max(float(np.abs(np.asarray(got[k]) - np.asarray(want[k])).max())
               / max(float(np.abs(np.asarray(want[k])).max()), 1e-30) for k in SERVING_OUTPUTS)


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
    difference = _relative_difference(got, want)
    if quantization == "none" and not difference <= FLOAT_TFLITE_TOLERANCE:
        raise ServingExportError(f"{path}: float32 TFLite differs from the graph by "
                                 f"{difference:.3g} (relative; expected ≤ "
                                 f"{FLOAT_TFLITE_TOLERANCE})")
    with open(path, "wb") as f:  # inside the export's staging directory
        f.write(content)
    logging.info("Wrote %s (%s, seq %d, %.1f MB; max relative difference to TF %.2g)", path,
                 quantization, seq_length, len(content) / 2**20, difference)
    return {"file": os.path.basename(path), "quantization": quantization, "seq_length": seq_length}


def write_openvino_ir(encoder: AlbertEncoder, directory: str) -> dict[str, Any]:
    """Converts the frozen float32 serving graph to OpenVINO IR in `directory`; needs the
    `openvino` package (`pip install albert-tf[openvino]`)."""
    try:
        import openvino as ov  # noqa: PLC0415  (optional dependency)
    except ImportError:
        raise ServingExportError("--openvino_ir needs the openvino package "
                                 "(pip install 'albert-tf[openvino]')") from None
    os.makedirs(directory, exist_ok=True)
    fn = frozen_serving_function(float32_copy(encoder))
    model = ov.convert_model(fn)
    for port, name in zip(model.inputs, INPUT_NAMES):  # keep our input names whatever OV infers
        if name not in port.get_names():
            port.get_tensor().set_names({name} | set(port.get_names()))
    xml = os.path.join(directory, OPENVINO_FILE)
    ov.save_model(model, xml, compress_to_fp16=False)
    logging.info("Wrote %s (OpenVINO IR, float32 weights)", xml)
    return {"file": os.path.join(OPENVINO_DIR, OPENVINO_FILE)}


def write_serving_artifacts(encoder: AlbertEncoder, export_dir: str,
                            tflite_quantization: str | None = None, tflite_seq_length: int = 128,
                            openvino_ir: bool = False) -> dict[str, Any]:
    """Writes serving/, the optional TFLite and OpenVINO files and serving.json into
    `export_dir` (an existing, staged directory); returns the manifest."""
    manifest = describe(encoder)
    save_serving_model(encoder, os.path.join(export_dir, SERVING_DIR))
    manifest["saved_model"] = SERVING_DIR
    if tflite_quantization is not None:
        if not 1 <= tflite_seq_length <= encoder.config.max_position_embeddings:
            raise ServingExportError(f"tflite_seq_length must be in [1, "
                                     f"{encoder.config.max_position_embeddings}], got "
                                     f"{tflite_seq_length}")
        manifest["tflite"] = write_encoder_tflite(
            encoder, os.path.join(export_dir, TFLITE_ENCODER_FILE), tflite_quantization,
            tflite_seq_length)
    if openvino_ir:
        manifest["openvino"] = write_openvino_ir(encoder, os.path.join(export_dir, OPENVINO_DIR))
    with open(os.path.join(export_dir, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    return manifest


def read_manifest(export_dir: str) -> dict[str, Any] | None:
    """serving.json of an encoder export, None when it has none (older exports)."""
    path = os.path.join(os.fspath(export_dir), MANIFEST)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
