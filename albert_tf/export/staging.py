"""Writing an export directory all at once: readers see the old export or the new one, never a
half-written mix, and a failed export leaves the old one in place."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator


@contextlib.contextmanager
def replaced_directory(target: str) -> Iterator[str]:
    """Yields an empty directory beside `target`; when the block ends without an error it
    replaces `target` (an older export there is removed), otherwise it is deleted."""
    target = os.path.abspath(os.fspath(target))
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.tmp-", dir=parent)
    try:
        yield staging
        if os.path.exists(target):
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging, ignore_errors=True)
