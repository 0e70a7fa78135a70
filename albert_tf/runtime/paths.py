"""The one rule for "is this a local path", and file access that works on both kinds.

Every path a user gives (a flag, an option, a config field) may name a bucket — gs://,
s3://, hdfs://, or TensorFlow's in-memory `ram://` the tests use — as the original's TPU
README does (`--output_dir=gs://…`). Such a path is reachable only through `tf.io.gfile`;
`os.path.exists`, `open()` and friends silently see nothing there. So code that reads or
checks a user's path calls these helpers instead (tests/test_remote_paths_ast.py fails on a
new `os.path`/`open()` outside its allow-list).

A local path takes the `os` fast path and imports nothing heavy, so the modules that check
options before TensorFlow is imported (quiet start-up) may use these helpers; TensorFlow is
imported only when a path is remote.

Libraries that read only local files (ONNX Runtime, OpenVINO, safetensors, torch) get a
local temporary copy of a remote input from `local_copy` (for one block) or `staged_copy`
(until the process exits: `load_serving`'s engines, an HF directory's weights): the one
place remote inputs are staged. Outputs written by such libraries (TFLite, ONNX, OpenVINO,
safetensors) go into an `atomic_directory`, which for a remote target is a local directory
uploaded when complete (`albert_tf.runtime.atomic_files`); SentencePiece's trainer writes into a
temporary directory whose files `atomic_file` then publishes.

Example:
    >>> from albert_tf import paths
    >>> paths.isfile("gs://bucket/albert_config.json")
    >>> with paths.local_copy("gs://bucket/model.onnx") as local:
    ...     session = onnxruntime.InferenceSession(local)
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import posixpath
import shutil
import tempfile
from typing import IO, Any, Iterator

__all__ = ["absolute", "exists", "glob", "is_local", "is_remote", "isdir", "isfile", "join", "listdir",
           "local_copy", "makedirs", "open_file", "read_bytes", "read_text",
           "remove", "rmtree", "staged_copy", "unknown_scheme"]


def is_remote(path: str | os.PathLike) -> bool:
    """Whether `path` names a tf.io.gfile file system (gs://, s3://, hdfs://, ram://, …)."""
    return "://" in os.fspath(path)


def is_local(path: str | os.PathLike) -> bool:
    """Whether `path` is on the local file system (where `os` and `open()` see it)."""
    return not is_remote(path)


def _gfile() -> Any:
    import tensorflow as tf  # remote paths only

    return tf.io.gfile


def unknown_scheme(path: str | os.PathLike) -> str | None:
    """For a remote path whose scheme TensorFlow has no file system for (`foo://`), the
    phrase saying so; else None (local paths and known schemes)."""
    if is_local(path):
        return None
    import tensorflow as tf

    try:
        tf.io.gfile.exists(os.fspath(path))
    except tf.errors.UnimplementedError:
        scheme = os.fspath(path).split("://", 1)[0]
        return f"no file system for the scheme {scheme}:// (TensorFlow knows file systems " \
               "such as gs://, s3://, hdfs://, ram://)"
    return None


def absolute(path: str | os.PathLike) -> str:
    """`os.path.abspath` for a local path; a remote one as given (abspath would turn
    `gs://b/x` into `<cwd>/gs:/b/x`)."""
    path = os.fspath(path)
    return os.path.abspath(path) if is_local(path) else path.rstrip("/")


def join(path: str, *names: str) -> str:
    """`os.path.join` for a local path, `/`-joined for a remote one."""
    return os.path.join(path, *names) if is_local(path) else posixpath.join(path, *names)


def exists(path: str | os.PathLike) -> bool:
    """Whether `path` exists (a file, a directory or, remote, a prefix)."""
    path = os.fspath(path)
    return os.path.exists(path) if is_local(path) else _gfile().exists(path)


def isdir(path: str | os.PathLike) -> bool:
    """Whether `path` is a directory (remote: a prefix that something lies under)."""
    path = os.fspath(path)
    if is_local(path):
        return os.path.isdir(path)
    gfile = _gfile()
    if not gfile.exists(path):
        return False
    return gfile.stat(path).is_directory


def isfile(path: str | os.PathLike) -> bool:
    """Whether `path` is a file."""
    path = os.fspath(path)
    if is_local(path):
        return os.path.isfile(path)
    gfile = _gfile()
    return gfile.exists(path) and not gfile.stat(path).is_directory


def listdir(path: str | os.PathLike) -> list[str]:
    """The names in directory `path` (no trailing `/`)."""
    path = os.fspath(path)
    if is_local(path):
        return os.listdir(path)
    return [name.rstrip("/") for name in _gfile().listdir(path)]


def glob(pattern: str) -> list[str]:
    """The paths matching `pattern`, sorted (local: `~` expanded, as a shell would)."""
    if is_local(pattern):
        return sorted(_glob.glob(os.path.expanduser(pattern)))
    return sorted(_gfile().glob(pattern))


def makedirs(path: str | os.PathLike) -> None:
    """Creates `path` and its missing parents (an existing one is fine)."""
    path = os.fspath(path)
    if is_local(path):
        os.makedirs(path, exist_ok=True)
    else:
        _gfile().makedirs(path)


def open_file(path: str | os.PathLike, mode: str = "r", encoding: str = "utf-8",
              errors: str | None = None) -> IO:
    """`open(path, mode)` for a local path, a `tf.io.gfile.GFile` for a remote one (text
    modes decode UTF-8 there). For reading and appending; whole outputs go through
    `albert_tf.runtime.atomic_files`."""
    path = os.fspath(path)
    if is_local(path):
        if "b" in mode:
            return open(path, mode)
        return open(path, mode, encoding=encoding, errors=errors)
    return _gfile().GFile(path, mode)


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole content of file `path`."""
    with open_file(path, "rb") as f:
        return f.read()


def read_text(path: str | os.PathLike, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The whole content of file `path`, decoded."""
    return read_bytes(path).decode(encoding, errors)


def remove(path: str | os.PathLike) -> None:
    """Deletes file `path`."""
    path = os.fspath(path)
    if is_local(path):
        os.remove(path)
    else:
        _gfile().remove(path)


def rmtree(path: str | os.PathLike) -> None:
    """Deletes directory `path` and everything under it."""
    path = os.fspath(path)
    if is_local(path):
        shutil.rmtree(path)
    else:
        _gfile().rmtree(path)


def _copy_tree(source: str, destination: str, gfile: Any) -> None:
    """Copies remote `source` (a file or a directory tree) to local `destination`."""
    if not gfile.isdir(source):
        gfile.copy(source, destination, overwrite=True)
        return
    for directory, _, files in gfile.walk(source):
        relative = directory[len(source):].strip("/")
        target = os.path.join(destination, relative) if relative else destination
        os.makedirs(target, exist_ok=True)
        for name in files:
            source_file = posixpath.join(directory, name)
            # ram:// lists by bare string prefix (`d/serving` lists `.json` of `d/serving.json`)
            if gfile.exists(source_file):
                gfile.copy(source_file, os.path.join(target, name), overwrite=True)


@contextlib.contextmanager
def local_copy(path: str | os.PathLike, companions: tuple[str, ...] = ()) -> Iterator[str]:
    """`path` itself if local; else a local temporary copy of the file or directory (and of
    the files `path + suffix` for each of `companions`, e.g. ".bin" beside an OpenVINO
    ".xml"), removed when the block ends. The one place remote inputs are staged for the
    libraries that open only local files."""
    path = os.fspath(path)
    if is_local(path):
        yield path
        return
    gfile = _gfile()
    scratch = tempfile.mkdtemp(prefix="albert_tf_remote_")
    try:
        local = os.path.join(scratch, posixpath.basename(path.rstrip("/")) or "copy")
        _copy_tree(path.rstrip("/"), local, gfile)
        for suffix in companions:
            if gfile.exists(path + suffix):
                gfile.copy(path + suffix, local + suffix, overwrite=True)
        yield local
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_STAGED: list[Any] = []


def staged_copy(path: str | os.PathLike, companions: tuple[str, ...] = ()) -> str:
    """`path` itself if local; else a local copy that lasts until the process exits (for
    what outlives one call: a loaded serving model whose engine reads its files later).
    As `local_copy` otherwise."""
    path = os.fspath(path)
    if is_local(path):
        return path
    copy = local_copy(path, companions)
    local = copy.__enter__()
    if not _STAGED:
        import atexit

        atexit.register(lambda: [context.__exit__(None, None, None) for context in _STAGED])
    _STAGED.append(copy)
    return local
