"""The named choices of the serving exports, importable without TensorFlow (fast --help).

Checked once, where the export is written (`tflite.convert`, `tfhub.export_encoder`); the
scripts' flags are `DEFINE_enum`s over the same tuples.
"""

# --tflite_quantization of the TFLite files (run_classifier/run_squad --export_dir,
# export_tfhub): float32 weights (the original's), int8 weights with dynamic-range int8
# matmuls, float16 weights.
TFLITE_QUANTIZATIONS = ("none", "dynamic_int8", "float16")
# export_tfhub --dtype → the Keras dtype policy the encoder is built under (mixed precision:
# bfloat16 compute, float32 variables; the same policies as the training --dtype).
EXPORT_DTYPE_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
EXPORT_DTYPES = tuple(EXPORT_DTYPE_POLICIES)
