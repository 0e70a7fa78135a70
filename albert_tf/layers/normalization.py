"""LayerNorm as the original computes it: population statistics, epsilon 1e-12, float32."""

from __future__ import annotations

import keras

# tf.contrib.layers.layer_norm adds 1e-12 to the variance (faithfulness §2.9); Keras' default is 1e-3.
LAYER_NORM_EPSILON = 1e-12


def layer_norm(name: str) -> keras.layers.LayerNormalization:
    """A LayerNorm over the last axis that always computes in float32 (mixed precision safe)."""
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
    )
