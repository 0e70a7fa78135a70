"""The named choices of the serving exports, importable without TensorFlow (fast --help).

Checked once, where the export is written (`tflite.convert`, `tfhub.export_encoder`); the
scripts' flags are `DEFINE_enum`s over the same tuples.
"""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.encoder_export_files import EXPORT_DTYPE_POLICIES, EXPORT_DTYPES
from albert_tf.runtime.options import option

# --tflite_quantization of the TFLite files (run_classifier/run_squad --export_dir,
# export_tfhub): float32 weights (the original's), int8 weights with dynamic-range int8
# matmuls, float16 weights.
TFLITE_QUANTIZATIONS = ("none", "dynamic_int8", "float16")
# export_tfhub --dtype (EXPORT_DTYPES) → the Keras dtype policy the encoder is built with:
# said where an export is read back (checkpoints/encoder_export_files.py), a floor below.
__all__ = ["EXPORT_DTYPES", "EXPORT_DTYPE_POLICIES", "TFLITE_QUANTIZATIONS", "ServingFileOptions"]


@dataclasses.dataclass(kw_only=True)
class ServingFileOptions:
    """The serving files written beside an export (run_classifier/run_squad --export_dir,
    export_tfhub) besides the SavedModel and the frozen serving graph."""

    tflite_quantization: str = option(
        "none", "Weights of the TFLite file beside the export (albert_model.tflite; "
                "export_tfhub: albert_encoder.tflite, written only when this flag is given): "
                "'none' float32 (the original's), 'dynamic_int8' int8 weights and dynamic-range "
                "int8 matmuls (~4x smaller), 'float16' float16 weights (~2x smaller).",
        choices=TFLITE_QUANTIZATIONS)
    openvino_ir: bool = option(
        False, "Also write the OpenVINO IR (openvino/*.xml + .bin) of the frozen serving graph, "
               "float32 weights, for albert_tf.serving.load_serving(backend='openvino'); needs "
               "pip install 'albert-tf[openvino]'.")
    onnx: bool = option(
        False, "Also write the ONNX file of the export for ONNX Runtime (needs pip install "
               "'albert-tf[onnx]'): task exports onnx/albert_model.onnx, float32, tf2onnx's "
               "conversion of serving/; export_tfhub onnx/albert_encoder.onnx, our ONNX graph, "
               "and per --onnx_quantization its int8 files.")
    int8_calibration_file: str | None = option(
        None, "Calibrate a static int8 export on this file: text lines (tokenized with the "
              "export's SentencePiece model, a pair tab-separated) or a TFRecord file with "
              "input_ids/input_mask/segment_ids. Writes openvino/*_int8.xml (OpenVINO IR "
              "quantized by NNCF; needs pip install 'albert-tf[openvino]'), kept only when it "
              "passes the accuracy gate on held-out sequences; load_serving(precision='int8') "
              "picks it. The fine-tuning scripts' --export_dir calibrates on their own training "
              "records when this is not given.")
    int8_calibration_steps: int = option(
        300, "At most this many sequences of the calibration input (every eighth held out for "
             "the accuracy gate); 0 turns the fine-tuning scripts' default calibration off.",
        lower_bound=0)
