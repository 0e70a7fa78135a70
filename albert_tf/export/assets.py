"""Asset files of a SavedModel, copied so that the export gets the user's umask modes.

`tf.saved_model.save` copies each `tf.saved_model.Asset` keeping its source file's mode: a
SentencePiece model that is -rw------- (or a config written by a tool that used
`tempfile.mkstemp`) would stay unreadable to a model server running as another user. A copy
made with a plain open() has the mode the umask gives, like every other file of the export.
"""

from __future__ import annotations

import os
import shutil

import tensorflow as tf


def asset_copy(source: str, directory: str) -> str:
    """Copies `source` (any tf.io.gfile path) into the scratch `directory` under the same
    name, so that the asset keeps its name in the export; returns the copy's path."""
    target = os.path.join(directory, os.path.basename(source))
    with tf.io.gfile.GFile(source, "rb") as f, open(target, "wb") as out:
        shutil.copyfileobj(f, out)
    return target
