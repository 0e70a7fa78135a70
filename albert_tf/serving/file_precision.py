"""The precision a bare serving file holds, read from its own tensors (no serving.json needed):
`load_serving("model.tflite", precision="int8")` works on any int8 TFLite file of ours, and a
bare OpenVINO IR's quantized ops say it is the static int8 one."""

from __future__ import annotations

import numpy as np

from albert_tf.runtime import paths
from albert_tf.serving.runtimes import interpreter_class

# What OpenVINO's IR holds once quantized (a bare .xml is int8 when its text has one of them).
INT8_IR_MARKERS = (b'type="FakeQuantize"', b'element_type="i8"', b'element_type="u8"')


def tflite_quantization(path: str) -> str:
    """--tflite_quantization of a TFLite file from its tensors: int8 weight tensors
    "dynamic_int8", float16 ones "float16", else "none"."""
    interpreter = interpreter_class()(model_content=paths.read_bytes(path))
    dtypes = {np.dtype(detail["dtype"]) for detail in interpreter.get_tensor_details()}
    if np.dtype(np.int8) in dtypes:
        return "dynamic_int8"
    if np.dtype(np.float16) in dtypes:
        return "float16"
    return "none"


def ir_is_int8(xml: str) -> bool:
    """Whether an OpenVINO IR holds int8 (quantized) ops, from its own text."""
    text = paths.read_bytes(xml)
    return any(marker in text for marker in INT8_IR_MARKERS)
