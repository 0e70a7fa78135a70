"""Gathering rows of a [B, S, H] sequence at per-example positions (heads, sparse queries)."""

from __future__ import annotations

import tensorflow as tf
from keras import ops


def gather_positions(sequence, positions):
    """Rows of `sequence` [B, S, H] at `positions` [B, P] → [B, P, H]."""
    return tf.gather(sequence, ops.cast(positions, "int32"), batch_dims=1)
