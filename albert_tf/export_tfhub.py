"""Exports TF-Hub-style SavedModels: the encoder (optionally with MLM) and text preprocessing.

    python -m albert_tf.export_tfhub --albert_config_file=albert_config.json \\
        --checkpoint=model.ckpt-best --spm_model_file=30k-clean.model \\
        --export_path=/tmp/albert_encoder --with_mlm \\
        --preprocess_export_path=/tmp/albert_preprocess

`--dtype=bfloat16` writes an encoder whose matmuls run in bfloat16 (LayerNorm, softmax and
the MLM logits in float32, variables float32; int32 inputs, float32 outputs as always): faster
serving on CPUs with bf16 units, slower without them (benchmarks/RESULTS.md).

`--checkpoint` is an original TF1 checkpoint, one of ours, a Hugging Face directory (whose
config.json and spiece.model then stand in for --albert_config_file / --spm_model_file) or one
of the original's TF1 Hub modules, unpacked (its albert_config.json and SentencePiece assets
likewise; a --albert_config_file given too must agree). The original's command line works
too (faithfulness §11.1): `--albert_directory` holding `albert_config.json`, the checkpoint
`--checkpoint_name` and `30k-clean.model`, as the released tarballs (or a TF1 Hub module); the
export then carries the MLM head, as the original's module does
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
needs pip install 'albert-tf[onnx]'). `albert_tf.serving.load_serving(export_path)` runs any of
them (`backend="onnxruntime"`; `precision="int8"` for the int8 file).

`--int8_calibration_file=FILE` (text lines or a TFRecord of input_ids/input_mask/segment_ids)
adds the static int8 OpenVINO IR `openvino/albert_encoder_int8.xml`, quantized by NNCF on
those sequences and kept only when it passes the accuracy gate (albert_tf/export/
int8_calibration.py); `load_serving(export_path, precision="int8")` picks it.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import app, flags

from albert_tf import cli

from albert_tf.runtime import options
from albert_tf.export.choices import EXPORT_DTYPES, ServingFileOptions
from albert_tf.export.onnx_artifacts import ONNX_QUANTIZATIONS

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json.")
flags.DEFINE_string("checkpoint", None, "Original TF1 checkpoint or one of ours (prefix or "
                    "directory), a Hugging Face model directory, a TF1 Hub module directory or a TF Model "
                    "Garden TF2 Hub encoder or object checkpoint.")
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
options.define_flags(ServingFileOptions)  # --tflite_quantization, --openvino_ir, --onnx
flags.DEFINE_integer("tflite_seq_length", 128, "Sequence length of albert_encoder.tflite (dynamic "
                     "batch; the loader pads shorter inputs).", lower_bound=1)
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


def run() -> None:
    """The flags → `albert_tf.export.tfhub` (TensorFlow is imported only now)."""
    import tensorflow as tf

    from albert_tf import checkpoints
    from albert_tf.export.tfhub import export_encoder, export_preprocessing, resolve_sources
    from albert_tf.model_source import task_config

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
    if FLAGS.export_path:
        if not config_file and not (checkpoints.is_hf_checkpoint(checkpoint)
                                    or checkpoints.is_tf1_hub_module(checkpoint)
                                    or checkpoints.is_model_garden_export(checkpoint)
                                    or checkpoints.is_keras_hub_preset(checkpoint)):
            raise app.UsageError("--export_path needs --albert_config_file (or "
                                 "--albert_directory, or a Hugging Face directory or TF1 Hub "
                                 "module as --checkpoint)")
        quantization = FLAGS.tflite_quantization if FLAGS["tflite_quantization"].present else None
        config = task_config(config_file, None, checkpoint)
        calibration = None
        if FLAGS.int8_calibration_file:  # read and checked before anything is written
            from albert_tf.export.calibration_data import DEFAULT_MAX_SAMPLES, read_calibration

            calibration = read_calibration(
                FLAGS.int8_calibration_file, config.vocab_size, config.type_vocab_size,
                spm_model_file, FLAGS.do_lower_case,
                min(FLAGS.tflite_seq_length, config.max_position_embeddings),
                FLAGS.int8_calibration_steps or DEFAULT_MAX_SAMPLES)
        export_encoder(config, checkpoint, FLAGS.export_path,
                       spm_model_file, FLAGS.do_lower_case, with_mlm, FLAGS.dtype, quantization,
                       FLAGS.tflite_seq_length, FLAGS.openvino_ir,
                       FLAGS.onnx_quantization if FLAGS.onnx else None, calibration)
    if FLAGS.preprocess_export_path:
        export_preprocessing(spm_model_file, FLAGS.preprocess_export_path,
                             FLAGS.do_lower_case, FLAGS.seq_length)


def _errors() -> tuple[type[BaseException], ...]:
    """An export that failed its check ends like bad input: one line, exit 1, nothing written."""
    from albert_tf.export.int8_calibration import Int8ExportError
    from albert_tf.export.onnx_artifacts import OnnxExportError
    from albert_tf.export.serving_artifacts import ServingExportError
    from albert_tf.export.tfhub import ExportError

    return ExportError, ServingExportError, OnnxExportError, Int8ExportError, FileExistsError


def main(argv: Sequence[str]) -> None:
    """The command line's one error path, in process (`cli.run_script`)."""
    cli.run_script("export_tfhub", argv, run, _errors())


def console_main() -> None:
    """`albert-export-tfhub` (console script) and `python -m albert_tf.export_tfhub`."""
    cli.start("export_tfhub", run, __name__, _errors())


if __name__ == "__main__":
    console_main()
