"""The original's SQuAD v1 `--export_dir` (faithfulness §9.8): a SavedModel + `albert_model.tflite`.

`export_dir/saved_model`: serving signature of int32 `[1, max_seq_length]` `input_ids`,
`input_mask`, `segment_ids` → float32 `start_logits`, `end_logits` [1, S].
`export_dir/albert_model.tflite`: the same graph with frozen weights, builtin ops only,
quantized by `--tflite_quantization`. Both are written into a temporary directory beside
`export_dir`, which replaces `export_dir` when complete.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf
from absl import logging

from albert_tf.export.staging import replaced_directory
from albert_tf.export.tflite import TFLITE_FILE, token_function, write_tflite

SAVED_MODEL_DIR = "saved_model"
SQUAD_OUTPUTS = ("start_logits", "end_logits")


class _SquadServing(tf.Module):
    def __init__(self, model: keras.Model, max_seq_length: int):
        super().__init__()
        self.model = model
        self.serve = token_function(model, max_seq_length, lambda out: {
            name: tf.cast(out[name], tf.float32) for name in SQUAD_OUTPUTS})


def export_squad_v1(model: keras.Model, export_dir: str, max_seq_length: int,
                    vocab_size: int, tflite_quantization: str = "none") -> str:
    """Writes `export_dir/saved_model` and `export_dir/albert_model.tflite` for a v1 span
    labeler (replacing an older export there); returns export_dir."""
    module = _SquadServing(model, max_seq_length)
    with replaced_directory(export_dir) as staging:
        tf.saved_model.save(module, os.path.join(staging, SAVED_MODEL_DIR),
                            signatures={"serving_default": module.serve})
        write_tflite(module.serve, os.path.join(staging, TFLITE_FILE), tflite_quantization,
                     vocab_size)
    logging.info("Exported the SQuAD v1 SavedModel and %s (%s) to %s", TFLITE_FILE,
                 tflite_quantization, export_dir)
    return export_dir
