"""Serving SavedModel of a fine-tuned classifier (faithfulness §8.6 "Export", `export_dir`).

Input: a batch of serialized `tf.train.Example` strings with `input_ids`, `input_mask`,
`segment_ids` (int64, length max_seq_length) — the original's serving input — in
`export_dir/saved_model/` (the task-export layout of albert_tf/export/layout.py; exports written
before it held this SavedModel at `export_dir` itself, which `layout.task_saved_model` reads). Outputs:
`probabilities` (softmax; STS-B: the raw output [B, 1]), `predictions` (argmax; STS-B: the
output [B]) and, when `threshold_to_export` is set, a constant `threshold`. Beside it in the
directory, `albert_model.tflite`: int32 [1, S] `input_ids`, `input_mask`, `segment_ids` →
`logits`, `probabilities`, `predictions` (no `threshold`), quantized by `--tflite_quantization`
(albert_tf/export/tflite.py). Also beside it (albert_tf/export/serving_artifacts.py):
`serving/`, the frozen serving graph for engines — int32 `[batch, seq]` `input_word_ids`,
`input_mask`, `input_type_ids` → `logits`, `probabilities`, `predictions` — in bfloat16 when the
model computes in bfloat16 (`--dtype=bfloat16`), else float32; with `openvino_ir`,
`openvino/albert_model.xml`; and `serving.json`, so that `albert_tf.serving.load_serving(export_dir)`
runs any of them. The directory is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import math
import os

import keras
import tensorflow as tf
from absl import logging

from albert_tf.export.layout import TASK_SAVED_MODEL_DIR
from albert_tf.export.serving_artifacts import task_tflite_entry, write_task_serving_artifacts
from albert_tf.export.staging import replaced_directory
from albert_tf.export.tflite import TFLITE_FILE, token_function, write_tflite
from albert_tf.finetuning.records import FEATURE_TO_INPUT, INPUT_FEATURES

CLASSIFIER_OUTPUTS = ("logits", "probabilities", "predictions")


class _ServingModule(tf.Module):
    def __init__(self, model: keras.Model, max_seq_length: int, is_regression: bool,
                 threshold: float | None):
        super().__init__()
        self.model = model
        self._spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
                      for name in INPUT_FEATURES}
        self._is_regression = is_regression
        self._threshold = threshold

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(self, examples):
        parsed = tf.io.parse_example(examples, self._spec)
        inputs = {FEATURE_TO_INPUT[k]: tf.cast(v, tf.int32) for k, v in parsed.items()}
        outputs = classifier_outputs(self.model(inputs, training=False), self._is_regression)
        del outputs["logits"]
        if self._threshold is not None:
            outputs["threshold"] = tf.constant(self._threshold, tf.float32)
        return outputs


def classifier_outputs(model_outputs, is_regression: bool) -> dict[str, tf.Tensor]:
    """`logits` (float32), `probabilities` (softmax; regression: the output) and `predictions`
    (argmax; regression: the output squeezed)."""
    logits = tf.cast(model_outputs["logits"], tf.float32)
    if is_regression:
        return {"logits": logits, "probabilities": logits, "predictions": tf.squeeze(logits, -1)}
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def export_classifier(model: keras.Model, export_dir: str, max_seq_length: int,
                      is_regression: bool, threshold_to_export: float = float("nan"),
                      tflite_quantization: str = "none", vocab_size: int | None = None,
                      tflite_model: keras.Model | None = None, openvino_ir: bool = False,
                      onnx: bool = False, int8_calibration: list | None = None) -> str:
    """Writes the serving SavedModel (`saved_model/`), `albert_model.tflite`, `serving/`,
    `serving.json`, with
    `openvino_ir` the OpenVINO IR and with `onnx` onnx/albert_model.onnx to `export_dir`
    (replacing an older export there).
    `tflite_model`: a float32 copy for the TFLite file and the OpenVINO IR (default `model`)."""
    threshold = None if threshold_to_export is None or math.isnan(threshold_to_export) \
        else float(threshold_to_export)
    module = _ServingModule(model, max_seq_length, is_regression, threshold)
    with replaced_directory(export_dir) as staging:
        tf.saved_model.save(module, os.path.join(staging, TASK_SAVED_MODEL_DIR),
                            signatures={"serving_default": module.serve})
        lite_model = tflite_model if tflite_model is not None else model
        lite = token_function(lite_model, max_seq_length,
                              lambda out: classifier_outputs(out, is_regression))
        write_tflite(lite, os.path.join(staging, TFLITE_FILE), tflite_quantization,
                     vocab_size or lite_model.config.vocab_size)
        extra = {} if threshold is None else {"threshold": threshold}
        write_task_serving_artifacts(
            model, lite_model, staging, lambda out: classifier_outputs(out, is_regression),
            CLASSIFIER_OUTPUTS, "regression" if is_regression else "classifier", max_seq_length,
            task_tflite_entry(tflite_quantization, max_seq_length), openvino_ir, onnx,
            int8_calibration, **extra)
    logging.info("Exported serving model to %s%s", export_dir,
                 "" if threshold is None else f" (threshold {threshold})")
    return export_dir
