"""The local file-system steps of an atomic publish (`runtime.atomic_files`): temporary
names beside a target, fsync of what is published, and a rename that replaces whatever the
target is (file, directory, nothing) with no moment without one.
"""

from __future__ import annotations

import os
import secrets
import shutil

NAME_LIMIT = 200  # of the target's name inside a temporary name (file names max out at 255)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def temporary_name(directory: str, target_name: str, join=os.path.join) -> str:
    """A hidden name beside the target; ends in `.tmp` so that leftovers are recognisable."""
    return join(directory, f".{target_name[:NAME_LIMIT]}.{secrets.token_hex(6)}.tmp")


def fsync_directory(directory: str) -> None:
    """Makes a rename in `directory` durable (where the platform can open directories)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def fsync_tree(root: str) -> None:
    """fsync of every file and directory under `root`: the content reaches the disk before
    the rename that publishes it (else a crash can leave a published but empty file)."""
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue
            handle = os.open(path, os.O_RDONLY | CLOEXEC)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        fsync_directory(directory)


def remove_local(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.remove(path)
        except OSError:
            pass


def replace_local(source: str, target: str) -> None:
    """Renames `source` to `target`, whatever `target` is now (file, directory, nothing).

    An existing target is first renamed aside, so there is no moment without one, and put
    back if the second rename fails."""
    if not os.path.lexists(target):
        os.rename(source, target)
        return
    if not os.path.isdir(source) and not os.path.isdir(target):
        os.replace(source, target)
        return
    aside = temporary_name(os.path.dirname(target), os.path.basename(target))
    os.rename(target, aside)
    try:
        os.rename(source, target)
    except BaseException:
        os.rename(aside, target)
        raise
    remove_local(aside)
