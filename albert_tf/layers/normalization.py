"""LayerNorm as the original computes it: population statistics, epsilon 1e-12, float32."""

from __future__ import annotations

import keras
from keras import ops

# tf.contrib.layers.layer_norm adds 1e-12 to the variance (faithfulness §2.9); Keras' default is 1e-3.
LAYER_NORM_EPSILON = 1e-12


def layer_norm(name: str) -> keras.layers.LayerNormalization:
    """A LayerNorm over the last axis that always computes in float32 (mixed precision safe)."""
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
    )


def residual_layer_norm(norm: keras.layers.LayerNormalization, out, tokens, compute_dtype: str,
                        shape):
    """The block ending of attention and feed-forward: LayerNorm(out + tokens) in float32 (the
    original's post-norm residual, §2.9), back in the compute dtype and the input's `shape`.

    `out` and `tokens` are rank 2 ([B·S, H]): oneDNN fuses the rank-2 MatMul+bias before it.
    """
    summed = ops.cast(out, "float32") + ops.cast(tokens, "float32")
    return ops.reshape(ops.cast(norm(summed), compute_dtype), shape)
