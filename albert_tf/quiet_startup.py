"""Quiet start-up for the command-line entry points: import it first, before TensorFlow.

What a user of the scripts should read is their own log (progress, ETA, metrics, the
restored-variable report) and real errors, not TensorFlow's start-up notices about a GPU
this machine does not have. Importing this module (idempotent):

* sets TF_CPP_MIN_LOG_LEVEL=2 unless the user set it: TensorFlow's C++ INFO and WARNING
  lines are hidden, ERROR and FATAL still show;
* with that level (2 or 3), when `tensorflow` is first imported — and its device platforms
  initialise, which happens right after, inside the same window — its stderr output is held
  back and then replayed without the lines that are not errors: the absl pre-initialisation
  notice and `cudart_stub … Could not find cuda drivers` (printed before TensorFlow applies
  any log level), `oneDNN supports DT_… only on platforms with AVX-512` and, only on a
  machine with no NVIDIA driver, `failed call to cuInit`. Everything else is replayed as is;
* keeps TensorFlow's Python INFO lines (e.g. "Assets written to: <temporary dir>") out of
  the scripts' logs, and hides third-party deprecation notices users cannot act on.

TF_CPP_MIN_LOG_LEVEL=0 or 1 turns the filtering off (everything TensorFlow says is shown).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
import warnings
from typing import Iterator

_NOISE = [
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written "
               r"to STDERR$"),
    re.compile(r"cudart_stub\.cc:\d+\] Could not find cuda drivers on your machine, GPU will "
               r"not be used\.$"),
    re.compile(r"oneDNN supports DT_\w+ only on platforms with AVX-512"),
]
# Only noise where no NVIDIA driver is installed; with one, a cuInit failure is a real error.
_NO_DRIVER_NOISE = re.compile(r"\] failed call to cuInit: ")
_THIRD_PARTY = r"(tensorflow|tf_keras|keras|tensorflow_hub|tensorflow_text|google|absl|numpy|h5py)(\.|$)"


def has_nvidia_driver() -> bool:
    return os.path.exists("/proc/driver/nvidia/version")


def is_noise(line: str, nvidia_driver: bool) -> bool:
    """Whether a captured start-up line is one of the known non-errors."""
    line = line.rstrip("\n")
    if any(pattern.search(line) for pattern in _NOISE):
        return True
    return not nvidia_driver and bool(_NO_DRIVER_NOISE.search(line))


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """Holds back what is written to file descriptor 2 inside the block (C++ included), then
    writes it out without the noise lines."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            driver = has_nvidia_driver()
            lines = capture.read().decode("utf-8", "replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not is_noise(line, driver))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


class _QuietLoader(importlib.abc.Loader):
    """Runs the real loader of `tensorflow` inside `filtered_stderr`, then lists the devices
    (where CUDA initialises) in the same window."""

    def __init__(self, loader: importlib.abc.Loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        with filtered_stderr():
            self._loader.exec_module(module)
            config = getattr(module, "config", None)
            if config is not None:
                config.list_physical_devices()

    def __getattr__(self, name: str):
        return getattr(self._loader, name)


class _TensorFlowImportFinder(importlib.abc.MetaPathFinder):
    """Wraps the loader of the first `import tensorflow`, then steps aside."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def install() -> None:
    """Applies the defaults above (safe to call again)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=_THIRD_PARTY)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning, module=_THIRD_PARTY)
    warnings.filterwarnings("ignore", category=FutureWarning, module=_THIRD_PARTY)
    # tensorflow_hub imports setuptools' pkg_resources, which warns on import (not ours to fix).
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
    tf_logger = logging.getLogger("tensorflow")
    if tf_logger.level == logging.NOTSET:
        tf_logger.setLevel(logging.WARNING)
    level = os.environ["TF_CPP_MIN_LOG_LEVEL"].strip()
    quiet = not level.isdigit() or int(level) >= 2
    if (quiet and "tensorflow" not in sys.modules
            and not any(isinstance(f, _TensorFlowImportFinder) for f in sys.meta_path)):
        sys.meta_path.insert(0, _TensorFlowImportFinder())


install()
