"""Initializers of the original (faithfulness §2.7)."""

from __future__ import annotations

import keras


def truncated_normal(stddev: float = 0.02) -> keras.initializers.Initializer:
    """Truncated normal, mean 0, cut at 2 stddev: the original's kernel/table initializer."""
    return keras.initializers.TruncatedNormal(stddev=stddev)
