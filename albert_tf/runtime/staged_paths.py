"""Log lines that name final paths, not the staging directories outputs are written in.

Log lines name final paths: while an `atomic_directory` is open, a line that absl's or
TensorFlow's logger writes naming its staging directory names the target instead (a file
written at `<staging>/x` is published as `<target>/x`), so a user never reads a hidden
`.name.<hex>.tmp` path (`StagedPaths`).
"""

from __future__ import annotations

import logging
import threading

__all__ = ["STAGED_PATHS", "StagedPaths"]


class StagedPaths(logging.Filter):
    """Rewrites each open staging directory to its target in the log records it sees.

    Installed (once, by the first `AtomicDirectory`) on the loggers of our lines and of
    TensorFlow's Python lines ("absl", "tensorflow"). Writers inside a staging directory
    log where they write; the user should read where the output will be. Nested stagings
    (a writer that stages inside another's staging directory) are undone innermost first.
    """

    LOGGERS = ("absl", "tensorflow")

    def __init__(self):
        super().__init__()
        self.open: tuple[tuple[str, str], ...] = ()  # (staging, target), outermost first
        self._lock = threading.Lock()
        self._installed = False

    def add(self, staging: str, target: str) -> None:
        with self._lock:
            if not self._installed:
                for name in self.LOGGERS:
                    logging.getLogger(name).addFilter(self)
                self._installed = True
            self.open += ((staging, target),)

    def remove(self, staging: str) -> None:
        with self._lock:
            self.open = tuple(pair for pair in self.open if pair[0] != staging)

    def filter(self, record: logging.LogRecord) -> bool:
        pairs = self.open  # a tuple, replaced whole: safe to read from any thread
        if not pairs:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: the handler reports it, as without us
            return True
        renamed = message
        for staging, target in reversed(pairs):
            renamed = renamed.replace(staging, target)
        if renamed != message:
            record.msg, record.args = renamed, None
        return True


# The one filter every AtomicDirectory registers its staging directory with.
STAGED_PATHS = StagedPaths()
