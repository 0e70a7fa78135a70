"""The precision a bare serving file holds, read from its own tensors (no serving.json needed):
`load_serving("model.tflite", precision="int8")` works on any int8 TFLite file of ours."""

from __future__ import annotations

import numpy as np


def tflite_quantization(path: str) -> str:
    """--tflite_quantization of a TFLite file from its tensors: int8 weight tensors
    "dynamic_int8", float16 ones "float16", else "none"."""
    from albert_tf.runtime import paths
    from albert_tf.export.tflite import _interpreter_class

    interpreter = _interpreter_class()(model_content=paths.read_bytes(path))
    dtypes = {np.dtype(detail["dtype"]) for detail in interpreter.get_tensor_details()}
    if np.dtype(np.int8) in dtypes:
        return "dynamic_int8"
    if np.dtype(np.float16) in dtypes:
        return "float16"
    return "none"
