"""Writing an export directory all at once: readers see the old export or the new one, never a
half-written mix, and a failed export leaves the old one in place."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from albert_tf.runtime.atomic_files import atomic_directory


@contextlib.contextmanager
def replaced_directory(target: str | os.PathLike) -> Iterator[str]:
    """Yields an empty directory beside `target`; when the block ends without an error it
    replaces `target` (an older export there is removed), otherwise it is deleted. The export
    gets the modes a plain mkdir()/open() would give (`albert_tf.runtime.atomic_files`)."""
    with atomic_directory(target, existing="replace", what="export") as staging:
        yield staging
