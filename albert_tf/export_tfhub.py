"""Exports TF-Hub-style SavedModels: the encoder (optionally with MLM) and text preprocessing.

    python -m albert_tf.export_tfhub --albert_config_file=albert_config.json \\
        --checkpoint=model.ckpt-best --spm_model_file=30k-clean.model \\
        --export_path=/tmp/albert_encoder --with_mlm \\
        --preprocess_export_path=/tmp/albert_preprocess

`--dtype=bfloat16` writes an encoder whose matmuls run in bfloat16 (LayerNorm, softmax and
the MLM logits in float32, variables float32; int32 inputs, float32 outputs as always): faster
serving on CPUs with bf16 units, slower without them (benchmarks/RESULTS.md).

`--checkpoint` is an original TF1 checkpoint, one of ours or a Hugging Face directory (whose
config.json and spiece.model then stand in for --albert_config_file / --spm_model_file). The
original's command line works too (faithfulness §11.1): `--albert_directory` holding
`albert_config.json`, the checkpoint `--checkpoint_name` and `30k-clean.model`, as the
released tarballs; the export then carries the MLM head, as the original's module does
(`--nowith_mlm` to leave it out); `--use_einsum` is accepted with no effect. Each export is
written under a temporary name, reloaded and checked against the Keras model, and only then
renamed into place; a failed export leaves nothing behind.

    python -m albert_tf.export_tfhub --albert_directory=albert_base \\
        --checkpoint_name=model.ckpt-best --export_path=/tmp/albert_base_hub

Beside the TF-Hub SavedModel, every encoder export holds the frozen serving graph `serving/`
(two outputs, no `training` input, weights constant) and `serving.json`; with
`--tflite_quantization=none|dynamic_int8|float16` also `albert_encoder.tflite`, with
`--openvino_ir` an OpenVINO IR, with `--onnx` our ONNX graph `onnx/albert_encoder.onnx` and its
dynamic int8 `onnx/albert_encoder_int8.onnx` (`--onnx_quantization=none` for float32 only;
needs pip install 'albert-tf[onnx]'). `albert_tf.export.load_serving(export_path)` runs any of
them (`backend="onnxruntime"`; `precision="int8"` for the int8 file).
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import cli
from albert_tf import checkpoints
from albert_tf.atomic_files import atomic_directory
from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.export.encoder_export import save_encoder_export
from albert_tf.export.onnx_artifacts import (ONNX_QUANTIZATIONS, OnnxExportError,
                                              write_onnx_artifacts)
from albert_tf.export.preprocessing import save_preprocessing_export
from albert_tf.export.serving import load_serving
from albert_tf.export.serving_artifacts import ServingExportError, write_serving_artifacts
from albert_tf.checkpoints.model_source import task_config
from albert_tf.finetuning.preflight import checkpoint_errors
from albert_tf.models import AlbertPretrainer
from albert_tf.models.encoder import INPUT_NAMES
from albert_tf.training import flags as training_flags
from albert_tf.training import hardware
from albert_tf.training.choices import DTYPE_POLICIES

FLAGS = flags.FLAGS
EXPORT_DTYPES = ("float32", "bfloat16")
flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json.")
flags.DEFINE_string("checkpoint", None, "Original TF1 checkpoint or one of ours (prefix or "
                    "directory), or a Hugging Face model directory.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model; copied into the exports' assets.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (encoder export only).")
flags.DEFINE_boolean("do_lower_case", True, "Whether inputs are lower-cased (recorded in the exports).")
flags.DEFINE_string("export_path", None, "Directory for the encoder SavedModel (must not exist).")
flags.DEFINE_boolean("with_mlm", False, "Add the `mlm` sub-object with the masked-LM head.")
flags.DEFINE_string("preprocess_export_path", None, "Directory for the preprocessing SavedModel.")
flags.DEFINE_enum("dtype", "float32", list(EXPORT_DTYPES),
                  "The encoder export's compute dtype: bfloat16 runs its matmuls in bfloat16 "
                  "(LayerNorm, softmax, logits float32); inputs int32, outputs float32.")
# Serving artifacts beside the SavedModel (albert_tf/export/serving_artifacts.py).
training_flags.define_tflite_flag()  # written only when given here: no TFLite file by default
flags.DEFINE_integer("tflite_seq_length", 128, "Sequence length of albert_encoder.tflite (dynamic "
                     "batch; the loader pads shorter inputs).", lower_bound=1)
training_flags.define_openvino_flag("openvino/albert_encoder.xml")
flags.DEFINE_boolean("onnx", False, "Also write onnx/albert_encoder.onnx (our ONNX graph, float32) "
                     "and, per --onnx_quantization, its int8 file (needs pip install "
                     "'albert-tf[onnx]').")
flags.DEFINE_enum("onnx_quantization", "dynamic_int8", list(ONNX_QUANTIZATIONS),
                  "With --onnx: 'dynamic_int8' also writes onnx/albert_encoder_int8.onnx (ONNX "
                  "Runtime dynamic quantization), 'none' the float32 file only.")
flags.DEFINE_integer("seq_length", 128, "Default sequence length of the preprocessing model.",
                     lower_bound=3)
# The original export_to_tfhub's flags (faithfulness §11.1).
flags.DEFINE_string("albert_directory", None,
                    "A released-tarball layout: albert_config.json, the checkpoint and "
                    "30k-clean.model (each used unless its own flag is given).")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best",
                    "Checkpoint prefix in --albert_directory.")
flags.DEFINE_boolean("use_einsum", True, "Accepted for the original's command lines; no effect "
                     "(the export has no TF1-only op to avoid).")
TARBALL_CONFIG = "albert_config.json"
TARBALL_SPM = "30k-clean.model"
TOLERANCE = 1e-5
# Reloaded bf16 export vs the Keras model under the same policy, relative to the outputs'
# largest magnitude: the graphs may round a few bf16 intermediates differently (one bf16
# unit in the last place is 2^-8 ≈ 0.4 % relative; see tests/export/test_bfloat16_export.py).
BF16_TOLERANCE = 2 ** -5


class ExportError(RuntimeError):
    """The written export failed its check; nothing was left at the destination."""


def _staged(destination: str):
    """A temporary sibling directory of `destination` (`atomic_directory`), renamed into place
    when its block ends; refused if the destination exists."""
    if tf.io.gfile.exists(destination):
        raise ExportError(f"{os.path.abspath(destination)}: already exists; choose a new export path")
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


def _max_difference(got: dict, want: dict, relative: bool = False) -> float:
    """max |got − want| over the outputs, over each output's largest |want| when relative."""
    return max(float(np.abs(got[k] - want[k]).max())
               / (max(float(np.abs(want[k]).max()), 1e-30) if relative else 1.0) for k in want)


def _check_encoder_export(path: str, pretrainer: AlbertPretrainer, with_mlm: bool) -> float:
    """Reloads the export and returns the max |difference| to the Keras model's outputs
    (relative to the outputs' magnitude for a bfloat16 export)."""
    inputs = _check_inputs(pretrainer.config.vocab_size)
    loaded = tf.saved_model.load(path)
    got = _outputs_of(loaded, inputs, with_mlm)
    if any(value.dtype != np.float32 for value in got.values()):
        raise ExportError(f"{path}: the export's outputs are not all float32")
    relative = pretrainer.encoder.compute_dtype != "float32"
    return _max_difference(got, _outputs_of(pretrainer, inputs, with_mlm), relative)


def _check_serving(path: str, pretrainer: AlbertPretrainer) -> float:
    """The frozen serving graph (`serving/`, run by TensorFlow) vs the Keras model, as
    `_check_encoder_export` measures it."""
    inputs = _check_inputs(pretrainer.config.vocab_size)
    got = load_serving(path, backend="tensorflow")(inputs)
    relative = pretrainer.encoder.compute_dtype != "float32"
    return _max_difference(got, _outputs_of(pretrainer, inputs, False), relative)


def export_encoder(config: AlbertConfig, checkpoint: str | None, export_path: str,
                   spm_model_file: str | None, do_lower_case: bool, with_mlm: bool,
                   dtype: str = "float32", tflite_quantization: str | None = None,
                   tflite_seq_length: int = 128, openvino_ir: bool = False,
                   onnx_quantization: str | None = None) -> str:
    """Builds the model (under --dtype's policy), restores `checkpoint`, writes and verifies
    the encoder export and its serving artifacts (the frozen `serving/` graph always; the
    TFLite file when `tflite_quantization` is given; the OpenVINO IR when asked; the ONNX files
    when `onnx_quantization` is given: "none" float32 only, "dynamic_int8" both)."""
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(EXPORT_DTYPES)}, got {dtype!r}")
    hardware.warn_if_slow_dtype(dtype, on_cpu=not tf.config.list_logical_devices("GPU"))
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(DTYPE_POLICIES[dtype])
    try:
        pretrainer = AlbertPretrainer(config)
    finally:
        keras.config.set_dtype_policy(previous)
    if checkpoint:
        allow = () if with_mlm else ("mlm_head", "sop_head")
        with checkpoint_errors("checkpoint", checkpoint):
            checkpoints.warm_start(pretrainer, checkpoint, allow)
    else:
        logging.warning("No --checkpoint: exporting randomly initialised weights")
    tolerance = TOLERANCE if dtype == "float32" else BF16_TOLERANCE
    with _staged(export_path) as staging:
        save_encoder_export(pretrainer.encoder, staging, spm_model_file, do_lower_case,
                            pretrainer if with_mlm else None)
        diff = _check_encoder_export(staging, pretrainer, with_mlm)
        write_serving_artifacts(pretrainer.encoder, staging, tflite_quantization,
                                tflite_seq_length, openvino_ir)
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
    the --albert_directory tarball layout (or an HF directory), then an HF checkpoint's files."""
    if albert_directory:
        if checkpoints.is_hf_checkpoint(albert_directory):
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
    return albert_config_file, checkpoint, spm_model_file


def main(argv: list[str]) -> None:
    """The command line; a full disk is one line and exit 1 (`cli.disk_full_exits`)."""
    with cli.disk_full_exits("export_tfhub"):
        _export_from_flags(argv)


def _export_from_flags(argv: list[str]) -> None:
    del argv
    if not FLAGS.export_path and not FLAGS.preprocess_export_path:
        raise app.UsageError("give --export_path and/or --preprocess_export_path")
    config_file, checkpoint, spm_model_file = resolve_sources(
        FLAGS.albert_directory, FLAGS.albert_config_file, FLAGS.checkpoint,
        FLAGS.checkpoint_name, FLAGS.spm_model_file)
    if FLAGS.preprocess_export_path and not spm_model_file:
        raise app.UsageError("--preprocess_export_path needs --spm_model_file (SentencePiece models only)")
    for flag, value in (("spm_model_file", spm_model_file), ("vocab_file", FLAGS.vocab_file)):
        if value and not tf.io.gfile.exists(value):
            raise app.UsageError(f"--{flag}={value}: file not found")
    with_mlm = FLAGS.with_mlm
    if FLAGS.albert_directory and not FLAGS["with_mlm"].present:
        with_mlm = True  # the original's module has the mlm signature
    try:
        if FLAGS.export_path:
            if not config_file and not checkpoints.is_hf_checkpoint(checkpoint):
                raise app.UsageError("--export_path needs --albert_config_file (or "
                                     "--albert_directory, or a Hugging Face --checkpoint)")
            config = task_config(config_file, None, checkpoint)
            quantization = (FLAGS.tflite_quantization if FLAGS["tflite_quantization"].present
                            else None)
            export_encoder(config, checkpoint, FLAGS.export_path, spm_model_file,
                           FLAGS.do_lower_case, with_mlm, FLAGS.dtype, quantization,
                           FLAGS.tflite_seq_length, FLAGS.openvino_ir,
                           FLAGS.onnx_quantization if FLAGS.onnx else None)
        if FLAGS.preprocess_export_path:
            export_preprocessing(spm_model_file, FLAGS.preprocess_export_path,
                                 FLAGS.do_lower_case, FLAGS.seq_length)
    except (ConfigError, ExportError, ServingExportError, OnnxExportError, ValueError,
            FileNotFoundError,
            FileExistsError) as e:
        # CheckpointMismatchError and the config-source errors are ValueErrors.
        raise SystemExit(f"export_tfhub: {e}") from None


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("export_tfhub"))
