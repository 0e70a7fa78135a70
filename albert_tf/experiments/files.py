"""Small file helpers of the experiments: complete-or-absent JSON and text outputs."""

from __future__ import annotations

import json
from typing import Any

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file


def write_text_atomically(path: str, text: str) -> None:
    """Writes `path` through a temporary name, so a reader never sees half a file."""
    with atomic_file(path) as f:
        f.write(text)


def write_json_atomically(path: str, value: Any) -> None:
    write_text_atomically(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def read_json(path: str) -> Any | None:
    """The JSON in `path`, or None when it does not exist (yet)."""
    if not paths.exists(path):
        return None
    return json.loads(paths.read_text(path))
