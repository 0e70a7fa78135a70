"""A write that fails for want of space, named once: `DiskFullError` and its test.

A full disk (ENOSPC; EFBIG from a file-size limit; EDQUOT), met while writing, flushing or
publishing, becomes `DiskFullError` naming the target and what it is (`what=`, e.g.
"pretraining records"), after the temporary is removed: the tools' one place for it
(`albert_tf.cli.disk_full_exits` prints it as one line, exit status 1). Errors of TensorFlow
or safetensors writing into an `atomic_directory` count too when their message says so.
"""

from __future__ import annotations

import errno
import os

__all__ = ["DISK_FULL_ERRNOS", "DiskFullError", "as_disk_full", "is_disk_full"]

# ENOSPC (no space left), EFBIG (file too large: RLIMIT_FSIZE), EDQUOT (quota exceeded).
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
_DISK_FULL_TEXTS = tuple(os.strerror(number) for number in sorted(DISK_FULL_ERRNOS))


class DiskFullError(OSError):
    """Writing `what` to `path` failed for want of space (or a file-size limit); the partial
    output was removed and a previous `path` left as it was. `errno` is the cause's."""

    def __init__(self, path: str, what: str, cause: BaseException):
        number = getattr(cause, "errno", None)
        if number not in DISK_FULL_ERRNOS:  # TensorFlow / safetensors: the text in the message
            number = next((n for n in sorted(DISK_FULL_ERRNOS) if os.strerror(n) in str(cause)),
                          errno.ENOSPC)
        # Only the errno: the cause's own text names temporaries (TensorFlow's runs to lines);
        # `--verbosity=1` logs the whole traceback.
        detail = f"[Errno {number}] {os.strerror(number)}"
        super().__init__(number, f"disk full while writing {what} {path}: {detail}")
        self.path, self.what = path, what

    def __str__(self) -> str:
        return self.strerror


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` is a write failing for want of space (an OSError's errno, or the
    strerror text in a TensorFlow/safetensors error's message)."""
    if isinstance(error, DiskFullError):
        return True
    if isinstance(error, OSError) and error.errno is not None:
        return error.errno in DISK_FULL_ERRNOS
    return isinstance(error, Exception) and any(text in str(error) for text in _DISK_FULL_TEXTS)


def as_disk_full(error: BaseException, path: str, what: str) -> BaseException:
    """`error`, or a DiskFullError naming `path` and `what` if it is a full disk."""
    if isinstance(error, DiskFullError) or not is_disk_full(error):
        return error
    return DiskFullError(path, what, error)
