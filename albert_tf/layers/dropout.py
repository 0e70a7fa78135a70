"""Dropout with its seed drawn ahead of time, so a recomputed block redraws the same masks.

A Keras `Dropout` layer draws a fresh seed from its SeedGenerator on every call (the
generator's state advances). When a block's activations are recomputed in the backward pass
(`--recompute_grad`), the second run would draw other masks and the gradients would be those
of a different network. `draw_seed` takes the seed the layer's next call would use, once, in
the forward pass; `apply_dropout` with that seed reproduces the layer's own mask exactly,
as often as it is called.
"""

from __future__ import annotations

from typing import Sequence

import keras
import tensorflow as tf


def draw_seed(layer: keras.layers.Dropout) -> tf.Tensor | None:
    """The seed `layer(x, training=True)` would draw now (advancing its generator), or
    None when the layer drops nothing (it then draws no seed either)."""
    return layer.seed_generator.next() if layer.rate > 0 else None


def draw_seeds(layers: Sequence[keras.layers.Dropout]) -> tuple[tf.Tensor | None, ...]:
    """`draw_seed` of each layer, in order."""
    return tuple(draw_seed(layer) for layer in layers)


def apply_dropout(layer: keras.layers.Dropout, x, training, seed: tf.Tensor | None = None):
    """`layer(x, training=training)`; with a `seed` from `draw_seed`, the mask that call
    would have drawn, without touching the generator (Keras' TF backend: stateless dropout
    on the generator's value folded into int32)."""
    if seed is None:
        return layer(x, training=training)
    if not training or layer.rate <= 0:
        return x
    if seed.dtype != tf.int32:
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    noise_shape = tf.shape(x)
    if layer.noise_shape is not None:
        noise_shape = [noise_shape[i] if size is None else size
                       for i, size in enumerate(layer.noise_shape)]
    return tf.nn.experimental.stateless_dropout(x, rate=layer.rate, noise_shape=noise_shape,
                                                seed=seed)
