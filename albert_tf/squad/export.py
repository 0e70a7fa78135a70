"""The original's SQuAD v1 `--export_dir` (faithfulness §9.8): a SavedModel + `albert_model.tflite`.

`export_dir/saved_model`: serving signature of int32 `[1, max_seq_length]` `input_ids`,
`input_mask`, `segment_ids` → float32 `start_logits`, `end_logits` [1, S].
`export_dir/albert_model.tflite`: the same graph with frozen weights, builtin ops only,
quantized by `--tflite_quantization`. Ours beside them (albert_tf/export/serving_artifacts.py):
`export_dir/serving/`, the frozen serving graph for engines (int32 `[batch, seq]`
`input_word_ids`, `input_mask`, `input_type_ids` → `start_logits`, `end_logits`), in bfloat16
when the trained model computes in bfloat16 (`--dtype=bfloat16`), else float32; with
`--openvino_ir` `openvino/albert_model.xml`; and `serving.json`, read by
`albert_tf.serving.load_serving(export_dir)`. All are written into a temporary directory beside
`export_dir`, which replaces `export_dir` when complete.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf
from absl import logging

from albert_tf.export.layout import TASK_SAVED_MODEL_DIR
from albert_tf.export.serving_artifacts import task_tflite_entry, write_task_serving_artifacts
from albert_tf.export.staging import replaced_directory
from albert_tf.export.tflite import TFLITE_FILE, token_function, write_tflite

SAVED_MODEL_DIR = TASK_SAVED_MODEL_DIR  # the old name (layout.py says it)
SQUAD_OUTPUTS = ("start_logits", "end_logits")


def squad_outputs(model_outputs) -> dict[str, tf.Tensor]:
    """v1's `start_logits`, `end_logits` in float32."""
    return {name: tf.cast(model_outputs[name], tf.float32) for name in SQUAD_OUTPUTS}


class _SquadServing(tf.Module):
    def __init__(self, model: keras.Model, max_seq_length: int):
        super().__init__()
        self.model = model
        self.serve = token_function(model, max_seq_length, squad_outputs)


def export_squad_v1(model: keras.Model, export_dir: str, max_seq_length: int,
                    vocab_size: int, tflite_quantization: str = "none", openvino_ir: bool = False,
                    trained_model: keras.Model | None = None, onnx: bool = False,
                    int8_calibration: list | None = None) -> str:
    """Writes `export_dir/saved_model`, `export_dir/albert_model.tflite`, `serving/`,
    `serving.json`, with `openvino_ir` the OpenVINO IR and with `onnx` onnx/albert_model.onnx
    for a v1 span labeler (replacing an
    older export there); returns export_dir. `model`: float32; `trained_model`: the model as
    trained (default `model`), whose bfloat16, if it computes in it, `serving/` keeps."""
    module = _SquadServing(model, max_seq_length)
    with replaced_directory(export_dir) as staging:
        tf.saved_model.save(module, os.path.join(staging, SAVED_MODEL_DIR),
                            signatures={"serving_default": module.serve})
        write_tflite(module.serve, os.path.join(staging, TFLITE_FILE), tflite_quantization,
                     vocab_size)
        write_task_serving_artifacts(
            trained_model if trained_model is not None else model, model, staging, squad_outputs,
            SQUAD_OUTPUTS, "squad_v1", max_seq_length,
            task_tflite_entry(tflite_quantization, max_seq_length), openvino_ir, onnx,
            int8_calibration)
    logging.info("Exported the SQuAD v1 SavedModel and %s (%s) to %s", TFLITE_FILE,
                 tflite_quantization, export_dir)
    return export_dir
