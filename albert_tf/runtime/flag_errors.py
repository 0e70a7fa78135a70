"""One line naming the flag whose file cannot be used: `--flag=path: what is wrong`.

The checkpoint loaders' messages start with the file they read; a script's user typed a flag,
so the line names the flag and its value instead (the loader's first line, its path prefix
dropped). Importable without TensorFlow: the fine-tuning preflight, the exports and the
command-line tools (convert, export_tfhub) all report through it.

Example:
    >>> with checkpoint_errors("init_checkpoint", path):
    ...     restore_model_weights(model, path)   # a mismatch → FlagValueError, one line
"""

from __future__ import annotations

import contextlib
from typing import Iterator


class FlagValueError(ValueError):
    """A file or directory given by a flag cannot be used (one line naming the flag)."""


def checkpoint_error(flag: str, path: str, error: Exception,
                     error_type: type[ValueError] = FlagValueError) -> ValueError:
    """One line `--flag=path: what is wrong` (the loaders' messages name the file they read)."""
    text = str(error).strip()
    message = text.splitlines()[0] if text else type(error).__name__
    if message.startswith(f"{path}: "):
        message = message[len(path) + 2:]
    return error_type(f"--{flag}={path}: {message}")


@contextlib.contextmanager
def checkpoint_errors(flag: str, path: str,
                      error_type: type[ValueError] = FlagValueError) -> Iterator[None]:
    """Re-raises what reading the checkpoint `path` of `--flag` fails with (missing, corrupt,
    mismatched) as one `error_type` line naming the flag."""
    import tensorflow as tf

    try:
        yield
    except (FileNotFoundError, ValueError, tf.errors.OpError) as e:
        # ValueError: CheckpointMismatchError, CheckpointFileError (an unreadable file).
        raise checkpoint_error(flag, path, e, error_type) from None
