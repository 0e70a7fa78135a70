"""How close a written export must stay to the model it came from: every tolerance once,
beside the check that uses it, and the one way the exports measure a difference.

An export is reloaded (or run by its engine) on a sample input and compared with what it was
made from before it is kept; a file beyond its bound is refused, nothing written. NumPy only.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

# A float32 export (the SavedModel, the frozen serving graph, the float32 ONNX file) vs the
# Keras model: max |export − Keras|, absolute. The same ops on the same weights: round-off only.
FLOAT32_TOLERANCE = 1e-5
# A bfloat16 export (or a float32 file of a bfloat16 model) vs the Keras model, relative to
# each output's largest magnitude: the graphs may round a few bf16 intermediates differently
# (one bf16 unit in the last place is 2^-8 ≈ 0.4 % relative; tests/export/test_bfloat16_export.py).
BF16_RELATIVE_TOLERANCE = 2 ** -5
# A float32 TFLite file or OpenVINO IR vs the TensorFlow graph it was converted from, relative
# to the outputs' magnitude (their converters reorder float sums). Quantized files are only
# checked for finite outputs: their error is the quantization's.
CONVERTED_FILE_TOLERANCE = 1e-4


def max_difference(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray],
                   relative: bool = False, keys: Iterable[str] | None = None) -> float:
    """max |got − want| over the outputs `keys` (default every key of `want`); when
    `relative`, each output's over its largest |want| (so one bound fits every scale)."""
    def one(key: str) -> float:
        a, b = np.asarray(got[key]), np.asarray(want[key])
        scale = max(float(np.abs(b).max()), 1e-30) if relative else 1.0
        return float(np.abs(a - b).max()) / scale
    return max(one(key) for key in (want if keys is None else keys))


def model_tolerance(relative: bool) -> float:
    """The bound of an export vs its Keras model: FLOAT32_TOLERANCE (absolute) for a float32
    model, BF16_RELATIVE_TOLERANCE (relative) for a bfloat16 one."""
    return BF16_RELATIVE_TOLERANCE if relative else FLOAT32_TOLERANCE
