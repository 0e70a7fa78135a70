"""Quiet command-line entry points: every script's first import, before TensorFlow.

What a user of the scripts should read is their own log (progress, ETA, metrics, the
restored-variable report) and real errors — not TensorFlow's notices (`oneDNN custom
operations are on`, `Could not find cuda drivers`, `Writing fingerprint to …`), on any CPU,
at any point of the run. Importing this module (idempotent):

* sets TF_CPP_MIN_LOG_LEVEL=2 unless the user set it, and gives TensorFlow's Python log
  the same threshold (2: errors only) — the `tensorflow` logger and the records TensorFlow's
  files write through absl's logger: TensorFlow's INFO and WARNING lines are not written;
* when the importer is the program itself (`__main__`: `python run_x.py`, `python -m
  albert_tf.x`) or a command-line module of ours that the program imports at its top level
  (a console script's wrapper as pip writes it: `from albert_tf.x import console_main`),
  with that level 2 or 3, sorts what reaches stderr by the channel it comes
  through: the program's Python code (`sys.stderr`: our absl log, tracebacks, warnings)
  writes straight to the real stderr; file descriptor 2, where TensorFlow's C++ log (and
  any child process) writes, becomes a pipe through `albert_tf.runtime.stderr_filter`, which drops
  C++ INFO/WARNING lines — TensorFlow prints some before any log level applies, e.g. the
  oneDNN notice wherever oneDNN's ops are on — and the known harmless ERROR lines, and
  keeps everything else. This lasts the whole process, not only `import tensorflow`;
  imported as a library (tests, a notebook) nothing is redirected;
* for the program, keeps absl's handler on the root logger (`AbslHandlerKept`): OpenVINO's
  converter takes it off at import, after which every line came in Python's default format
  (`INFO:absl:…`) through a handler without the filter below, ONNX Runtime's lines included;
* hides third-party deprecation notices users cannot act on.

TF_CPP_MIN_LOG_LEVEL=0 or 1 turns the filtering off: everything TensorFlow says is shown.

The execution choices are not this module's: being every command's first import, its import
by the program is where a tool starts, so that import first runs `execution_rules.start_tool`
(TF_ENABLE_ONEDNN_OPTS from the CPU profile, unless the user set it), then the quieting above.
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import io
import logging
import os
import select
import sys
import warnings
from types import FrameType

from absl import logging as absl_logging

from albert_tf.runtime import execution_rules, stderr_filter
from albert_tf.runtime.hardware import has_nvidia_driver

_THIRD_PARTY = r"(tensorflow|tf_keras|keras|tensorflow_hub|tensorflow_text|google|absl|numpy|h5py)(\.|$)"
# TF_CPP_MIN_LOG_LEVEL → the level of TensorFlow's Python logger (same meaning as in C++).
_PYTHON_LEVELS = {0: logging.INFO, 1: logging.WARNING, 2: logging.ERROR, 3: logging.CRITICAL}
_FLUSH_WAIT_SECONDS = 5.0
_filter: dict[str, int] = {}  # this process's pid, the ack pipe, the filter's pid, fd 2's pipe


def cpp_log_level() -> int:
    """TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it (2 where unset or not a number)."""
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2").strip()
    return min(int(level), 3) if level.isdigit() else 2


def install() -> None:
    """The environment and logger defaults above (safe to call again)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=_THIRD_PARTY)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning, module=_THIRD_PARTY)
    warnings.filterwarnings("ignore", category=FutureWarning, module=_THIRD_PARTY)
    # tensorflow_hub imports setuptools' pkg_resources, which warns on import (not ours to fix).
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
    threshold = _PYTHON_LEVELS[cpp_log_level()]
    tf_logger = logging.getLogger("tensorflow")
    if tf_logger.level == logging.NOTSET:
        tf_logger.setLevel(threshold)
    # Some of TensorFlow's Python modules log through absl's logger, ours, and ONNX Runtime's
    # quantizer through the root logger: told apart by file, at the handler both reach.
    for target in (absl_logging.get_absl_logger(), absl_logging.get_absl_handler()):
        if not any(isinstance(f, LibraryRecords) for f in target.filters):
            target.addFilter(LibraryRecords(threshold))


class LibraryRecords(logging.Filter):
    """Drops the log records below `threshold` that the libraries' own Python files write
    through absl's or the root logger: TensorFlow's (`Sharding callback duration`, `Writing
    fingerprint to`, `Function … contains input name(s)`: INFO lines that look like ours but
    are not) and the serving engines' (ONNX Runtime's quantizer logs a line per tensor)."""

    PACKAGES = ("tensorflow", "onnxruntime", "openvino")

    def __init__(self, threshold: int, packages: tuple[str, ...] = PACKAGES):
        super().__init__()
        self.threshold = threshold
        roots: list[str] = []
        for package in packages:
            spec = importlib.util.find_spec(package)  # where it is, without importing it
            for d in (spec.submodule_search_locations or []) if spec is not None else []:
                roots += [os.path.join(d, ""), os.path.join(os.path.realpath(d), "")]
        self.prefixes = tuple(dict.fromkeys(roots))
        # Inside a tf.function, AutoGraph calls our own `logging.info` from its api.py, so the
        # record names that file: such a record is ours, not TensorFlow's.
        self.autograph = tuple(os.path.join(root, "python", "autograph", "") for root in roots)

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= self.threshold or not self.prefixes
                or not record.pathname.startswith(self.prefixes)
                or record.pathname.startswith(self.autograph))


class AbslHandlerKept(logging.Filter):
    """Puts absl's handler back on the root logger when a library has taken it off.

    OpenVINO's converter removes it when imported (`openvino/tools/ovc/logger.py`, a
    workaround for an old absl bug); absl's next line then calls `logging.basicConfig()`, whose
    handler writes Python's default format without `LibraryRecords`, and ONNX Runtime's
    quantizer (`logging.info` on the root logger) does the same. On absl's logger and the root
    logger, this filter sees such a record before it is handled: once absl's handler has been
    on the root (`app.run` puts it there), it removes the stderr handlers basicConfig added (as
    absl's `use_absl_handler` does) and adds absl's back. It changes no record.
    """

    def __init__(self):
        super().__init__()
        self.seen = False  # absl's handler was on the root logger once

    def filter(self, record: logging.LogRecord) -> bool:
        handler = absl_logging.get_absl_handler()
        root = logging.getLogger()
        if handler in root.handlers:
            self.seen = True
        elif self.seen:
            for other in list(root.handlers):
                if (type(other) is logging.StreamHandler
                        and other.stream in (sys.stderr, sys.__stderr__)):
                    root.removeHandler(other)
            root.addHandler(handler)
        return True


def keep_absl_handler() -> None:
    """Installs one `AbslHandlerKept` on absl's logger and the root logger (once)."""
    loggers = (absl_logging.get_absl_logger(), logging.getLogger())
    if any(isinstance(f, AbslHandlerKept) for logger in loggers for f in logger.filters):
        return
    keeper = AbslHandlerKept()
    for logger in loggers:
        logger.addFilter(keeper)


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of `fd` numbered 10 or above (clear of 0–3 in the child)."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


def filter_stderr() -> bool:
    """Starts the filter process and points fd 2 at it, `sys.stderr` at the real stderr.
    Once per process; False where it is off (TF_CPP_MIN_LOG_LEVEL 0/1) or cannot run."""
    if _filter.get("pid") == os.getpid():
        return True
    if cpp_log_level() < 2 or not sys.executable:
        return False
    sys.stderr.flush()
    opened: list[int] = []
    try:
        real = _high_fd(2)
        opened.append(real)
        read_end, write_end = os.pipe()
        opened += [read_end, write_end]
        ack_read, ack_write = os.pipe()
        opened += [ack_read, ack_write]
        fds = [_high_fd(fd) for fd in (read_end, ack_write)]
        opened += fds
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", stderr_filter.__file__, "3",
             "1" if has_nvidia_driver() else "0"],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, fds[0], 0), (os.POSIX_SPAWN_DUP2, real, 1),
                          (os.POSIX_SPAWN_DUP2, real, 2), (os.POSIX_SPAWN_DUP2, fds[1], 3)])
    except OSError:  # no usable stderr, no pipes or no interpreter: leave stderr as it is
        for fd in opened:
            os.close(fd)
        return False
    for fd in (read_end, ack_write, *fds):
        os.close(fd)
    os.dup2(write_end, 2)
    os.close(write_end)
    old = sys.stderr
    sys.stderr = io.TextIOWrapper(io.FileIO(real, "w", closefd=False),
                                  encoding=getattr(old, "encoding", None) or "utf-8",
                                  errors=getattr(old, "errors", None) or "backslashreplace",
                                  line_buffering=getattr(old, "line_buffering", False),
                                  write_through=True)
    _repoint_handlers(old, sys.stderr)
    pipe = os.fstat(2)
    _filter.update(pid=os.getpid(), ack=ack_read, child=pid, dev=pipe.st_dev, ino=pipe.st_ino)
    atexit.register(flush)
    return True


def _repoint_handlers(old, new) -> None:
    """Log handlers created before (absl's, if imported first) write where sys.stderr does."""
    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is old:
                handler.stream = new
    absl_logging = sys.modules.get("absl.logging")
    handler = getattr(absl_logging, "get_absl_handler", lambda: None)()
    python_handler = getattr(handler, "python_handler", None)
    if python_handler is not None and python_handler.stream is old:
        python_handler.stream = new


def flush(timeout: float = _FLUSH_WAIT_SECONDS) -> bool:
    """Waits until the filter has written out everything fd 2 received so far (at exit,
    so that the last lines come before the shell's prompt). True when it has."""
    if _filter.get("pid") != os.getpid():  # not started, or a forked child's copy
        return False
    try:
        if os.waitpid(_filter["child"], os.WNOHANG)[0]:  # the filter is gone: nothing to wait for
            return False
        pipe = os.fstat(2)
    except (ChildProcessError, OSError):
        return False
    if (pipe.st_dev, pipe.st_ino) != (_filter["dev"], _filter["ino"]):  # fd 2 was re-pointed
        return False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.write(2, stderr_filter.FLUSH_MARK)
        ready, _, _ = select.select([_filter["ack"]], [], [], timeout)
        return bool(ready) and os.read(_filter["ack"], 1) == b"."
    except OSError:
        return False


def _importer(frame: FrameType | None) -> FrameType | None:
    """The frame of the `import` statement that is running this module."""
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    return frame


def imported_by_the_program(frame: FrameType | None) -> bool:
    """Whether the import running at `frame` is the program's own: `__main__` imports this
    module, or imports at its top level a module of ours that imports it first (a console
    script's wrapper, `from albert_tf.x import console_main`: every entry point imports this
    module first). A test, a notebook cell's function or a library importing a tool is not."""
    main = sys.modules.get("__main__")
    caller = _importer(frame)
    if main is None or caller is None:
        return False
    if caller.f_globals is vars(main):
        return True
    if (caller.f_code.co_name != "<module>"
            or not str(caller.f_globals.get("__name__", "")).startswith("albert_tf.")):
        return False
    outer = _importer(caller.f_back)
    return outer is not None and outer.f_code.co_name == "<module>" and outer.f_globals is vars(main)


install()
if imported_by_the_program(sys._getframe(0).f_back):
    # A tool starts here, before TensorFlow is imported: its execution choices (not the log's).
    execution_rules.start_tool()
    keep_absl_handler()
    filter_stderr()
