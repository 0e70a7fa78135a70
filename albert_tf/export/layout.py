"""The file names and directory layout of every export, said once (tests/export/test_layout.py
checks that no other module spells one of them).

An encoder export (export_tfhub --export_path=DIR):
    DIR/saved_model.pb, variables/, assets/    the TF-Hub SavedModel (the original's layout)
    DIR/serving/                                the frozen serving SavedModel
    DIR/serving.json                            what the export holds (serving/manifest.py)
    DIR/albert_encoder.tflite                   --tflite_quantization
    DIR/openvino/albert_encoder{,_int8}.xml     --openvino_ir, --int8_calibration_file
    DIR/onnx/albert_encoder{,_int8,_int8_vnni}.onnx   --onnx (--onnx_quantization)

A task export (run_classifier, run_squad v1, --export_dir=DIR): the task's SavedModel under
DIR/saved_model/ (GLUE exports before this release wrote it at DIR itself:
`task_saved_model` reads both), DIR/albert_model.tflite, DIR/serving/, DIR/serving.json,
DIR/openvino/albert_model{,_int8}.xml, DIR/onnx/albert_model.onnx.

The names a server reads are said on floors below the writers and listed here with the others:
serving.json and serving/ in albert_tf/serving/layout.py, saved_model.pb in
albert_tf/checkpoints/tf1_hub_files.py.
Standard library only: the writers' option checks import it before TensorFlow.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.tf1_hub_files import SAVED_MODEL_FILE
from albert_tf.runtime import paths
from albert_tf.serving.layout import MANIFEST, SERVING_DIR  # noqa: F401  (the reader's names)

SAVED_MODEL_PB = SAVED_MODEL_FILE   # what makes a directory a SavedModel (said where the
                                    # checkpoint readers, a floor below, need it too)
TASK_SAVED_MODEL_DIR = "saved_model"  # a task export's own SavedModel (the original's signature)

TFLITE_FILE = "albert_model.tflite"  # the original's SQuAD v1 file name (§9.8); task exports
TFLITE_ENCODER_FILE = "albert_encoder.tflite"

OPENVINO_DIR = "openvino"
OPENVINO_FILE = "albert_encoder.xml"
OPENVINO_TASK_FILE = "albert_model.xml"  # a task export's IR, named like its albert_model.tflite
OPENVINO_INT8_FILE = "albert_encoder_int8.xml"
OPENVINO_TASK_INT8_FILE = "albert_model_int8.xml"

ONNX_DIR = "onnx"
ONNX_FILE = "albert_encoder.onnx"
ONNX_INT8_FILE = "albert_encoder_int8.onnx"
ONNX_INT8_VNNI_FILE = "albert_encoder_int8_vnni.onnx"
TASK_ONNX_FILE = "albert_model.onnx"
ONNX_FUSED_TEMP_FILE = "fused.onnx"  # a temporary, inside a temporary directory


def task_saved_model(export_dir: str) -> str:
    """The task SavedModel of a task export: DIR/saved_model, or DIR itself for a GLUE export
    written before the layouts were made one."""
    inside = os.path.join(os.fspath(export_dir), TASK_SAVED_MODEL_DIR)
    return inside if paths.isfile(os.path.join(inside, SAVED_MODEL_PB)) else os.fspath(export_dir)
