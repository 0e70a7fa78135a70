"""The library half of `python -m albert_tf.export_tfhub`: write, reload and check the exports.

`export_encoder` builds the pretrainer under the export's dtype policy, restores a checkpoint
(any kind `albert_tf.checkpoints` reads), writes the TF-Hub-style encoder SavedModel and its
serving artifacts into a staging directory, reloads them and compares them with the Keras
model; only a checked export is renamed into place, and a failed one leaves nothing behind.
`export_preprocessing` does the same for the text preprocessing SavedModel. `resolve_sources`
reads the original's `--albert_directory` tarball layout (faithfulness §11.1).

Example:
    >>> export_encoder(config, "model.ckpt-best", "/tmp/albert_encoder", "30k-clean.model",
    ...                do_lower_case=True, with_mlm=True)
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.runtime import paths
from albert_tf import checkpoints
from albert_tf.runtime import hardware
from albert_tf.runtime.atomic_files import atomic_directory
from albert_tf.config import AlbertConfig
from albert_tf.export.choices import EXPORT_DTYPE_POLICIES, EXPORT_DTYPES
from albert_tf.export.encoder_export import save_encoder_export
from albert_tf.export.onnx_artifacts import write_onnx_artifacts
from albert_tf.export.parity import (BF16_RELATIVE_TOLERANCE, FLOAT32_TOLERANCE, max_difference,
                                     model_tolerance)
from albert_tf.export.preprocessing import save_preprocessing_export
from albert_tf.serving.engines import ENGINES
from albert_tf.serving.artifact import Artifact
from albert_tf.export.serving_artifacts import write_serving_artifacts
from albert_tf.runtime.flag_errors import checkpoint_errors
from albert_tf.models import AlbertPretrainer
from albert_tf.training import distribute

TARBALL_CONFIG = "albert_config.json"
TARBALL_SPM = "30k-clean.model"
# The export's bounds, named where they are defined (parity.py); the old names still work.
TOLERANCE = FLOAT32_TOLERANCE
BF16_TOLERANCE = BF16_RELATIVE_TOLERANCE


class ExportError(RuntimeError):
    """The written export failed its check; nothing was left at the destination."""


def _staged(destination: str):
    """A temporary sibling directory of `destination` (`atomic_directory`), renamed into place
    when its block ends; refused if the destination exists."""
    if tf.io.gfile.exists(destination):
        raise ExportError(f"{paths.absolute(destination)}: already exists; choose a new export path")
    return atomic_directory(destination, existing="refuse", what="export")


def _check_inputs(vocab_size: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab_size, (2, 16)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 10:] = 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def _outputs_of(model, inputs: dict, with_mlm: bool) -> dict[str, np.ndarray]:
    """pooled/sequence outputs (and MLM logits) of the export or of the Keras pretrainer."""
    positions = np.array([[1, 2, 3], [4, 5, 6]], "int32")
    feed = {k: tf.constant(v) for k, v in inputs.items()}
    if isinstance(model, AlbertPretrainer):
        out = model.encoder(inputs)
        mlm = model({**inputs, "masked_lm_positions": positions}) if with_mlm else None
    else:
        out = model(feed)
        mlm = (model.mlm({**feed, "masked_lm_positions": tf.constant(positions)})
               if with_mlm else None)
    values = {k: np.asarray(tf.cast(out[k], tf.float32)) for k in ("pooled_output", "sequence_output")}
    if mlm is not None:
        values["mlm_logits"] = np.asarray(mlm["mlm_logits"])
    return values


def _check_encoder_export(path: str, pretrainer: AlbertPretrainer, with_mlm: bool) -> float:
    """Reloads the export and returns the max |difference| to the Keras model's outputs
    (relative to the outputs' magnitude for a bfloat16 export)."""
    inputs = _check_inputs(pretrainer.config.vocab_size)
    loaded = tf.saved_model.load(path)
    got = _outputs_of(loaded, inputs, with_mlm)
    if any(value.dtype != np.float32 for value in got.values()):
        raise ExportError(f"{path}: the export's outputs are not all float32")
    relative = pretrainer.encoder.compute_dtype != "float32"
    return max_difference(got, _outputs_of(pretrainer, inputs, with_mlm), relative)


def _check_serving(path: str, pretrainer: AlbertPretrainer) -> float:
    """The frozen serving graph (`serving/`, run by TensorFlow) vs the Keras model, as
    `_check_encoder_export` measures it."""
    inputs = _check_inputs(pretrainer.config.vocab_size)
    artifact = Artifact(path)
    got = ENGINES["tensorflow"].load(artifact, artifact.saved_model, artifact.precision,
                                     None)(inputs)
    relative = pretrainer.encoder.compute_dtype != "float32"
    return max_difference(got, _outputs_of(pretrainer, inputs, False), relative)


def export_encoder(config: AlbertConfig, checkpoint: str | None, export_path: str,
                   spm_model_file: str | None, do_lower_case: bool, with_mlm: bool,
                   dtype: str = "float32", tflite_quantization: str | None = None,
                   tflite_seq_length: int = 128, openvino_ir: bool = False,
                   onnx_quantization: str | None = None,
                   int8_calibration: list | None = None) -> str:
    """Builds the model (with --dtype's policy), restores `checkpoint`, writes and verifies
    the encoder export and its serving artifacts (the frozen `serving/` graph always; the
    TFLite file when `tflite_quantization` is given; the OpenVINO IR when asked; the ONNX files
    when `onnx_quantization` is given: "none" float32 only, "dynamic_int8" both; the static int8
    OpenVINO IR when `int8_calibration` samples are given and it passes its accuracy gate)."""
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(EXPORT_DTYPES)}, got {dtype!r}")
    hardware.warn_if_slow_dtype(dtype, on_cpu=distribute.runs_on_cpu(tf.distribute.get_strategy()))
    pretrainer = AlbertPretrainer(config, dtype=EXPORT_DTYPE_POLICIES[dtype])
    if checkpoint:
        # The mlm sub-object computes no SOP output: a source without that head (Model Garden's
        # with_mlm exports, an HF masked LM) exports too.
        allow = ("sop_head",) if with_mlm else ("mlm_head", "sop_head")
        with checkpoint_errors("checkpoint", checkpoint):
            checkpoints.warm_start(pretrainer, checkpoint, allow)
    else:
        logging.warning("No --checkpoint: exporting randomly initialised weights")
    tolerance = model_tolerance(relative=dtype != "float32")
    with _staged(export_path) as staging:
        save_encoder_export(pretrainer.encoder, staging, spm_model_file, do_lower_case,
                            pretrainer if with_mlm else None)
        diff = _check_encoder_export(staging, pretrainer, with_mlm)
        write_serving_artifacts(pretrainer.encoder, staging, tflite_quantization,
                                tflite_seq_length, openvino_ir, int8_calibration)
        if onnx_quantization is not None:
            write_onnx_artifacts(pretrainer.encoder, staging, onnx_quantization)
        diff = max(diff, _check_serving(staging, pretrainer))
        if not diff <= tolerance:
            raise ExportError(f"{export_path}: reloaded export differs from the model by {diff:.3g}"
                              + (" (relative)" if dtype != "float32" else ""))
    logging.info("Encoder export (%s) written to %s (max reload difference %.2g%s)", dtype,
                 export_path, diff, ", relative" if dtype != "float32" else "")
    return export_path


def export_preprocessing(spm_model_file: str, export_path: str, do_lower_case: bool, seq_length: int) -> str:
    """Writes and verifies the preprocessing export."""
    with _staged(export_path) as staging:
        save_preprocessing_export(spm_model_file, staging, do_lower_case, seq_length)
        packed = tf.saved_model.load(staging)(tf.constant(["export check"]))
        if tuple(packed["input_word_ids"].shape) != (1, seq_length):
            raise ExportError(f"{export_path}: preprocessing export gives shape "
                              f"{packed['input_word_ids'].shape}, expected (1, {seq_length})")
    logging.info("Preprocessing export written to %s", export_path)
    return export_path


def resolve_sources(albert_directory: str | None, albert_config_file: str | None,
                    checkpoint: str | None, checkpoint_name: str,
                    spm_model_file: str | None) -> tuple[str | None, str | None, str | None]:
    """(config file, checkpoint, SentencePiece model) from the flags: explicit ones win, then
    the --albert_directory tarball layout (or an HF directory or TF1 Hub module), then an HF
    checkpoint's files or a TF1 Hub module's SentencePiece asset."""
    if albert_directory:
        if (checkpoints.is_hf_checkpoint(albert_directory)
                or checkpoints.is_tf1_hub_module(albert_directory)
                or checkpoints.is_model_garden_export(albert_directory)
                or checkpoints.is_keras_hub_preset(albert_directory)):
            checkpoint = checkpoint or albert_directory
        else:
            checkpoint = checkpoint or os.path.join(albert_directory, checkpoint_name)
            albert_config_file = (albert_config_file
                                  or os.path.join(albert_directory, TARBALL_CONFIG))
            tarball_spm = os.path.join(albert_directory, TARBALL_SPM)
            if not spm_model_file and tf.io.gfile.exists(tarball_spm):
                spm_model_file = tarball_spm
    if checkpoint and checkpoints.is_hf_checkpoint(checkpoint):
        spm_model_file = spm_model_file or checkpoints.spm_model_of(checkpoint)
    if checkpoint and checkpoints.is_tf1_hub_module(checkpoint) and not spm_model_file:
        with checkpoint_errors("checkpoint", checkpoint):
            spm_model_file = checkpoints.read_tf1_hub_module(checkpoint).spm_model_file
    if checkpoint and checkpoints.is_model_garden_export(checkpoint) and not spm_model_file:
        with checkpoint_errors("checkpoint", checkpoint):  # its sp_model_file asset
            spm_model_file = checkpoints.read_model_garden(checkpoint).spm_model_file
    if checkpoint and checkpoints.is_keras_hub_preset(checkpoint) and not spm_model_file:
        with checkpoint_errors("checkpoint", checkpoint):  # assets/tokenizer/vocabulary.spm
            spm_model_file = checkpoints.read_keras_hub_preset(checkpoint).files.spm_model_file
    return albert_config_file, checkpoint, spm_model_file
