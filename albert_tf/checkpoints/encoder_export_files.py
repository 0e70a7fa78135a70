"""An encoder export (`export_tfhub`) as the readers see it, without TensorFlow: the dtypes it is
written in and read back in (export_tfhub --dtype, `load_keras_encoder(dtype=)`). Reading one
is `checkpoints.encoder_exports`; its file names are the layout's (export/layout.py)."""

from __future__ import annotations

# --dtype → the Keras dtype policy the encoder is built with (mixed precision: bfloat16
# compute, float32 variables): the training --dtype's table (training/choices.py), without
# float16 (tests/serving/test_moved_names.py keeps the two the same).
EXPORT_DTYPE_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
EXPORT_DTYPES = tuple(EXPORT_DTYPE_POLICIES)
