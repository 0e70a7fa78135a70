"""Tracing a `tf.function` so `tf.saved_model.save` reuses the trace instead of making another.

Saving looks functions up under a key that includes its save context; a trace made outside one
never matches, so every function an export holds was traced twice. Traces made inside
`traced_for_saving()` carry the context `tf.saved_model.save(obj, path)` uses (default
`SaveOptions`). The context manager is TensorFlow's private one: there is no public equivalent
(TensorFlow is pinned, requirements.txt); were it to move, only this module changes.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import tensorflow as tf
from tensorflow.python.saved_model import save_context  # no public equivalent


@contextlib.contextmanager
def traced_for_saving() -> Iterator[None]:
    """Concrete functions made inside are those a default-options save traces."""
    with save_context.save_context(tf.saved_model.SaveOptions()):
        yield
