"""Outputs written all at once, with the permissions a plain open()/mkdir() would give.

Every file and directory the tools write goes through `atomic_file` or `atomic_directory`:
the content is written under a temporary name beside the target (same directory, so the
rename never crosses file systems), fsync'ed, then renamed into place. A reader sees the old
output or the new one, never half of one; a failure (an exception, Ctrl-C) removes the
temporary and leaves the target as it was.

Permissions: the temporary is created with mode 0666 (a directory with 0777) and the kernel
takes the process's umask (and a default ACL, if any) off at creation — exactly what
`open(path, "w")` and `os.mkdir(path)` do, so under umask 022 files are 0644 and directories
0755. (`tempfile.mkstemp`/`mkdtemp` create 0600/0700, which left exports that a model server
running as another user could not read.) The umask is never read or set here: `os.umask` can
only be read by setting it, process-wide, racing with any thread creating files meanwhile.

A full disk met while writing, flushing or publishing becomes `DiskFullError` naming the
target and what it is (`runtime.disk_full`), after the temporary is removed.

Log lines name final paths while an `atomic_directory` is open (`runtime.staged_paths`).

Remote paths (`scheme://…`: gs://, s3://, hdfs://, ram://; `albert_tf.runtime.paths.is_remote`) go
through `tf.io.gfile` — TensorFlow is imported only then, so this module stays the bottom floor
every other one may import. What "atomic" means there: an object store has no directories (a
directory is a prefix of object names), no modes, and its rename is a copy then a delete. So
- a file (`atomic_file`) is written under a temporary name beside the target and renamed:
  each object is complete or absent, a reader never sees half of one; a failure leaves the
  target as it was;
- a directory (`atomic_directory`) is filled in a *local* temporary directory (so every
  writer works, also the libraries that write only local files: TFLite, ONNX, OpenVINO,
  safetensors), uploaded on commit under a temporary prefix beside the target, then each
  object renamed to its final name ("replace" then deletes the old objects the new output
  lacks). A failure before the renames leaves the target as it was; during them a reader
  may see a mix of old and new objects, never a half-written one, and never an empty target;
- permissions are not set (object stores have none; the bucket's policy applies).

Example:
    >>> with atomic_file("out/eval_results.txt") as f:
    ...     f.write("loss = 0.5\\n")
    >>> with atomic_directory("export/encoder", existing="refuse") as staging:
    ...     tf.saved_model.save(module, staging)
"""

from __future__ import annotations

import abc
import os
import posixpath
import shutil
import tempfile
from typing import IO, Any

from albert_tf.runtime.disk_full import DISK_FULL_ERRNOS, DiskFullError, as_disk_full, is_disk_full
from albert_tf.runtime.local_files import (CLOEXEC, NAME_LIMIT, fsync_directory, fsync_tree,
                                           replace_local, temporary_name)
from albert_tf.runtime.paths import is_remote  # the one rule of what is remote (re-exported)
from albert_tf.runtime.staged_paths import STAGED_PATHS, StagedPaths

# DiskFullError, DISK_FULL_ERRNOS, is_disk_full and StagedPaths are imported here too, where
# callers have found them (they live in runtime.disk_full and runtime.staged_paths).
__all__ = ["DISK_FULL_ERRNOS", "EXISTING_POLICIES", "AtomicDirectory", "AtomicFile",
           "DiskFullError", "StagedPaths", "atomic_directory", "atomic_file", "is_disk_full",
           "is_remote"]

REPLACE, REFUSE, MERGE = "replace", "refuse", "merge"
EXISTING_POLICIES = (REPLACE, REFUSE, MERGE)


def _gfile() -> Any:
    import tensorflow as tf  # remote paths only

    return tf.io.gfile


def _exists_error(path: str) -> FileExistsError:
    return FileExistsError(f"{path}: already exists (refusing to replace it)")


def _check_policy(existing: str, allowed: tuple[str, ...]) -> None:
    if existing not in allowed:
        raise ValueError(f"existing must be one of {', '.join(allowed)}, got {existing!r}")


class _PublishedOnSuccess(abc.ABC):
    """`with` semantics shared by AtomicFile and AtomicDirectory: a block that ends normally
    publishes (`commit`), one that raises discards the temporary and re-raises (a full disk as
    DiskFullError naming the output)."""

    @abc.abstractmethod
    def commit(self) -> None:
        """Publishes the temporary under the target name."""

    @abc.abstractmethod
    def discard(self) -> None:
        """Removes the temporary; the target stays as it was."""

    @abc.abstractmethod
    def failure(self, error: BaseException) -> BaseException:
        """The error to raise for `error` (a DiskFullError naming the output, or `error`)."""

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
            return
        self._discard_and_raise(exc, reraise=False)

    def _discard_and_raise(self, error: BaseException, reraise: bool = True) -> None:
        """Removes the temporary, then raises what `failure` makes of `error` (`error`
        itself only when `reraise`: a `with` block re-raises it on its own)."""
        self.discard()
        failure = self.failure(error)
        if failure is not error:
            raise failure from error
        if reraise:
            raise error


class AtomicFile(_PublishedOnSuccess):
    """A file written under a temporary name and renamed to `path` by `commit()`.

    Use it as a context manager (`with atomic_file(path) as f:` — committed when the block
    ends normally, discarded on any exception), or hold it open across calls and end it with
    `commit()` or `discard()` (as `AtomicTFRecordWriter` does).

    Args:
      path: the target (a local path, or a tf.io.gfile URL such as gs://bucket/file).
      mode: "w" (text) or "wb" (bytes).
      encoding: of text mode (UTF-8 unless given).
      newline: as `open()`'s (e.g. "\\n" for the same bytes on every platform).
      existing: "replace" an existing target, or "refuse" one (FileExistsError, checked
        before anything is written and again at the rename).
    Missing parent directories are created (as `os.makedirs` does, umask applied).
    """

    def __init__(self, path: str | os.PathLike, mode: str = "w", *, encoding: str = "utf-8",
                 newline: str | None = None, existing: str = REPLACE, what: str = "output"):
        if mode not in ("w", "wb"):
            raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
        _check_policy(existing, (REPLACE, REFUSE))
        self.existing, self.what = existing, what
        self._remote = is_remote(path)
        self.is_local = not self._remote
        self._done = False
        if self._remote:
            self.path = os.fspath(path)
            gfile = _gfile()
            if existing == REFUSE and gfile.exists(self.path):
                raise _exists_error(self.path)
            directory, name = posixpath.split(self.path)
            gfile.makedirs(directory)
            self.temp_path = temporary_name(directory, name, posixpath.join)
            self.stream: IO = gfile.GFile(self.temp_path, mode)
            return
        self.path = os.path.abspath(os.fspath(path))
        if existing == REFUSE and os.path.lexists(self.path):
            raise _exists_error(self.path)
        directory, name = os.path.split(self.path)
        os.makedirs(directory, exist_ok=True)
        while True:
            self.temp_path = temporary_name(directory, name)
            try:  # 0o666: the kernel applies the umask, as for open(path, "w")
                handle = os.open(self.temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | CLOEXEC,
                                 0o666)
                break
            except FileExistsError:
                continue
        try:
            self.stream = os.fdopen(handle, mode, encoding=None if mode == "wb" else encoding,
                                    newline=None if mode == "wb" else newline)
        except BaseException:
            os.close(handle)
            os.remove(self.temp_path)
            raise

    def commit(self) -> str:
        """Flushes, fsyncs and renames the file into place; returns the target path. On any
        failure the temporary is removed and the error raised."""
        if self._done:
            raise ValueError(f"{self.path}: already committed or discarded")
        try:
            if self._remote:
                self.stream.close()
                self._publish_remote()
            else:
                self.stream.flush()
                os.fsync(self.stream.fileno())
                self.stream.close()
                self._publish_local()
        except BaseException as e:
            self._discard_and_raise(e)
        self._done = True
        return self.path

    def failure(self, error: BaseException) -> BaseException:
        """What to raise for `error` met while writing: a DiskFullError naming the target if
        it is a full disk, else `error` itself."""
        return as_disk_full(error, self.path, self.what)

    def _publish_local(self) -> None:
        if self.existing == REPLACE:
            os.replace(self.temp_path, self.path)
        else:
            try:  # link() fails if the target exists: no window between check and rename
                os.link(self.temp_path, self.path)
            except FileExistsError:
                raise _exists_error(self.path) from None
            except OSError:  # a file system without hard links
                if os.path.lexists(self.path):
                    raise _exists_error(self.path) from None
                os.rename(self.temp_path, self.path)
            else:
                os.remove(self.temp_path)
        fsync_directory(os.path.dirname(self.path))

    def _publish_remote(self) -> None:
        gfile = _gfile()
        if self.existing == REFUSE and gfile.exists(self.path):
            raise _exists_error(self.path)
        gfile.rename(self.temp_path, self.path, overwrite=self.existing == REPLACE)

    def discard(self) -> None:
        """Closes and removes the temporary; the target stays as it was. Idempotent."""
        if self._done:
            return
        self._done = True
        try:
            self.stream.close()
        except Exception:  # already failing; the removal matters
            pass
        try:
            if self._remote:
                gfile = _gfile()
                if gfile.exists(self.temp_path):
                    gfile.remove(self.temp_path)
            elif os.path.lexists(self.temp_path):
                os.remove(self.temp_path)
        except Exception:
            pass

    def __enter__(self) -> IO:
        return self.stream


class AtomicDirectory(_PublishedOnSuccess):
    """A directory filled under a temporary name (`.path`) and published by `commit()`.

    Use it as a context manager (`with atomic_directory(target) as staging:` — published when
    the block ends normally, deleted on any exception) or call `commit()`/`discard()`.

    Args:
      path: the target directory (local, or a tf.io.gfile URL).
      what: what the directory holds, for the DiskFullError of a full disk ("an export").
      existing: what happens to a target that exists —
        "replace": removed, the new directory takes its place (an export's usual update;
          locally the old one is renamed aside first, so the target never goes missing);
        "refuse": FileExistsError, checked before anything is written and again at the end;
        "merge": the target is kept (created if missing) and each entry of the new directory
          is moved into it, replacing an entry of the same name (checkpoint files written
          into an output directory that holds others). The staging directory then lives
          inside the target, so only the target needs to be writable.
    Missing parent directories are created (as `os.makedirs` does, umask applied).
    """

    def __init__(self, path: str | os.PathLike, existing: str = REPLACE, what: str = "output"):
        _check_policy(existing, EXISTING_POLICIES)
        self.existing, self.what = existing, what
        self._remote = is_remote(path)
        self._done = False
        self._created_target = False
        self._upload: str | None = None
        if self._remote:
            self.target = os.fspath(path).rstrip("/")
            if existing == REFUSE and _gfile().exists(self.target):
                raise _exists_error(self.target)
            # Filled locally (any writer can write there), uploaded by commit().
            name = posixpath.basename(self.target)[:NAME_LIMIT]
            self.path = tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp")
            STAGED_PATHS.add(self.path, self.target)
            return
        self.target = os.path.abspath(os.fspath(path))
        if existing == REFUSE and os.path.lexists(self.target):
            raise _exists_error(self.target)
        if existing == MERGE:
            self._created_target = not os.path.isdir(self.target)
        parent = self.target if existing == MERGE else os.path.dirname(self.target)
        os.makedirs(parent, exist_ok=True)
        while True:
            self.path = temporary_name(parent, os.path.basename(self.target))
            try:
                os.mkdir(self.path, 0o777)  # the kernel applies the umask, as for os.mkdir(path)
                break
            except FileExistsError:
                continue
        STAGED_PATHS.add(self.path, self.target)

    def commit(self) -> str:
        """fsyncs the staging tree and publishes it; returns the target. On any failure the
        staging directory is removed and the error raised."""
        if self._done:
            raise ValueError(f"{self.target}: already committed or discarded")
        try:
            if self._remote:
                self._publish_remote()
            else:
                self._publish_local()
        except BaseException as e:
            self._discard_and_raise(e)
        self._done = True
        STAGED_PATHS.remove(self.path)
        return self.target

    def failure(self, error: BaseException) -> BaseException:
        """A DiskFullError naming the target if `error` is a full disk, else `error` (one
        raised by a writer inside the staging directory is renamed to the target too)."""
        if isinstance(error, DiskFullError) and (
                error.path == self.path or error.path.startswith(self.path + os.sep)):
            return DiskFullError(self.target, self.what, error.__cause__ or error)
        return as_disk_full(error, self.target, self.what)

    def _publish_local(self) -> None:
        fsync_tree(self.path)
        if self.existing == MERGE:
            for name in sorted(os.listdir(self.path)):
                replace_local(os.path.join(self.path, name), os.path.join(self.target, name))
            os.rmdir(self.path)
            fsync_directory(self.target)
        elif self.existing == REFUSE:
            # rename() would silently replace an empty directory; a check narrows that window.
            if os.path.lexists(self.target):
                raise _exists_error(self.target)
            os.rename(self.path, self.target)
        else:
            replace_local(self.path, self.target)
        fsync_directory(os.path.dirname(self.target))

    def _publish_remote(self) -> None:
        """Uploads the local staging tree under a temporary prefix beside the target, then
        renames (on object stores: copies) each object into place; "replace" then deletes
        the old objects the new output lacks. Object stores have no directory rename."""
        gfile = _gfile()
        if self.existing == REFUSE and gfile.exists(self.target):
            raise _exists_error(self.target)
        parent = self.target if self.existing == MERGE else posixpath.dirname(self.target)
        self._upload = temporary_name(parent, posixpath.basename(self.target), posixpath.join)
        files = []
        for directory, _, names in os.walk(self.path):
            relative = os.path.relpath(directory, self.path)
            for name in sorted(names):
                files.append(name if relative == "." else posixpath.join(
                    relative.replace(os.sep, "/"), name))
        for relative in files:  # a failure here leaves the target as it was
            destination = posixpath.join(self._upload, relative)
            gfile.makedirs(posixpath.dirname(destination))
            gfile.copy(os.path.join(self.path, relative), destination, overwrite=True)
        old = set()
        if self.existing == REPLACE and gfile.isdir(self.target):
            for directory, _, names in gfile.walk(self.target):
                relative = directory[len(self.target):].strip("/")
                old.update(posixpath.join(relative, n) if relative else n for n in names)
        for relative in files:
            destination = posixpath.join(self.target, relative)
            gfile.makedirs(posixpath.dirname(destination))
            gfile.rename(posixpath.join(self._upload, relative), destination, overwrite=True)
        for relative in sorted(old - set(files)):
            if gfile.exists(posixpath.join(self.target, relative)):  # ram:// lists loosely
                gfile.remove(posixpath.join(self.target, relative))
        gfile.rmtree(self._upload)
        shutil.rmtree(self.path, ignore_errors=True)

    def discard(self) -> None:
        """Deletes the staging directory (and a merge target this object created, if still
        empty); the target stays as it was. Idempotent."""
        if self._done:
            return
        self._done = True
        STAGED_PATHS.remove(self.path)
        try:
            if self._remote:
                shutil.rmtree(self.path, ignore_errors=True)
                if self._upload is not None and _gfile().exists(self._upload):
                    _gfile().rmtree(self._upload)
                return
            shutil.rmtree(self.path, ignore_errors=True)
            if self._created_target:
                os.rmdir(self.target)
        except Exception:  # already failing; best effort
            pass

    def __enter__(self) -> str:
        return self.path


def atomic_file(path: str | os.PathLike, mode: str = "w", *, encoding: str = "utf-8",
                newline: str | None = None, existing: str = REPLACE,
                what: str = "output") -> AtomicFile:
    """`with atomic_file(path) as f: f.write(...)` — see `AtomicFile`."""
    return AtomicFile(path, mode, encoding=encoding, newline=newline, existing=existing, what=what)


def atomic_directory(path: str | os.PathLike, existing: str = REPLACE,
                     what: str = "output") -> AtomicDirectory:
    """`with atomic_directory(target) as staging: <write into staging>` — see `AtomicDirectory`."""
    return AtomicDirectory(path, existing, what)
