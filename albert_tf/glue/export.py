"""Serving SavedModel of a fine-tuned classifier (spec §8.6 "Export", `export_dir`).

Input: a batch of serialized `tf.train.Example` strings with `input_ids`, `input_mask`,
`segment_ids` (int64, length max_seq_length) — the original's serving input. Outputs:
`probabilities` (softmax; STS-B: the raw output [B, 1]), `predictions` (argmax; STS-B: the
output [B]) and, when `threshold_to_export` is set, a constant `threshold`. The directory is
written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile

import keras
import tensorflow as tf
from absl import logging

from albert_tf.finetuning.records import FEATURE_TO_INPUT, INPUT_FEATURES


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
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self._is_regression:
            outputs = {"probabilities": logits, "predictions": tf.squeeze(logits, -1)}
        else:
            outputs = {"probabilities": tf.nn.softmax(logits, axis=-1),
                       "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}
        if self._threshold is not None:
            outputs["threshold"] = tf.constant(self._threshold, tf.float32)
        return outputs


def export_classifier(model: keras.Model, export_dir: str, max_seq_length: int,
                      is_regression: bool, threshold_to_export: float = float("nan")) -> str:
    """Writes the serving SavedModel to `export_dir` (replacing an older export there)."""
    threshold = None if threshold_to_export is None or math.isnan(threshold_to_export) \
        else float(threshold_to_export)
    module = _ServingModule(model, max_seq_length, is_regression, threshold)
    parent = os.path.dirname(os.path.abspath(export_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".export-", dir=parent)
    try:
        tf.saved_model.save(module, staging, signatures={"serving_default": module.serve})
        if os.path.exists(export_dir):
            shutil.rmtree(export_dir)
        os.replace(staging, export_dir)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    logging.info("Exported serving model to %s%s", export_dir,
                 "" if threshold is None else f" (threshold {threshold})")
    return export_dir
