"""A tf.function whose graph holds the variables it reads as constants, taken when it is made.

Why: oneDNN keeps a constant weight packed in its blocked layout between calls and Grappler
folds the weight's casts, while a weight read from a variable is cast (under mixed precision)
and re-packed at every call; on a CPU with AMX, a bf16 matmul on a variable runs oneDNN's
gemm kernel, on a constant its AMX brgemm kernel (benchmarks/RESULTS.md, "Prediction on frozen
weights"). Exporters need it too: TFLite's converter and TensorFlow Serving's `serving/` graph
take the weights as constants. The frozen function does not see later changes to the
variables: make a new one.
"""

from __future__ import annotations

import functools
import inspect

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (  # no public equivalent
    convert_variables_to_constants_v2)


def frozen_function(fn: tf.types.experimental.GenericFunction
                    ) -> tf.types.experimental.GenericFunction:
    """`fn` (a tf.function with an input_signature) traced once, its variables read now and
    folded in as constants: a tf.function with the same signature and output structure."""
    live = fn.get_concrete_function()
    constant = convert_variables_to_constants_v2(live)
    signature = inspect.signature(fn.python_function)

    @functools.wraps(fn.python_function)  # the same argument names, for keyword calls
    def frozen(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).args
        flat = constant(*tf.nest.flatten(list(arguments), expand_composites=True))
        return tf.nest.pack_sequence_as(live.structured_outputs, flat, expand_composites=True)

    return tf.function(frozen, input_signature=fn.input_signature)
