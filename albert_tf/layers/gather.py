"""Rows of a [B, S, H] sequence: at per-example positions (heads, sparse queries) or one slice
of rows shared by every example (the first token, which the pooler reads)."""

from __future__ import annotations

import tensorflow as tf
from keras import ops

# The rows of a sequence-level head: the first token alone, the same row in every example.
FIRST_TOKEN = slice(0, 1)


def gather_positions(sequence, positions):
    """Rows of `sequence` [B, S, H] at `positions` [B, P] → [B, P, H]."""
    return tf.gather(sequence, ops.cast(positions, "int32"), batch_dims=1)


def select_rows(sequence, rows):
    """Rows of `sequence` [B, S, H]: `rows` a slice (the same rows of every example, a plain
    strided slice that every engine reads) or per-example positions [B, P]."""
    if isinstance(rows, slice):
        return sequence[:, rows]
    return gather_positions(sequence, rows)
