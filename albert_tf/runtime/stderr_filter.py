"""The filter between TensorFlow's C++ log and the terminal (see albert_tf.runtime.quiet_startup).

`quiet_startup` points file descriptor 2 of a script at a pipe read by this file, run as a
separate process (`python -I -S stderr_filter.py ACK_FD DRIVER`), and gives the script's
Python code (`sys.stderr`: its absl log, tracebacks, warnings) a direct copy of the real
stderr. So what arrives here is what C and C++ code writes to fd 2 — TensorFlow's log —
plus the output of child processes that inherited fd 2. A separate process, not a thread,
so that whatever precedes a crash (a fatal signal, `os._exit`, a `LOG(FATAL)` and its stack
trace) still gets out: the pipe is drained to its end after the script is gone.

What a line *is* decides, not its words: a C++ log line starts with its severity letter and
a timestamp, `I0000 00:00:1795645160.032510    5076 port.cc:153] …` (I, W, E or F).
I and W lines are dropped, E and F lines kept — but for the few known harmless E lines,
`KNOWN_HARMLESS_ERRORS` — and every other line is kept as it is: a child's Python absl
line (same prefix, but from a `.py` file), tracebacks, progress output. The one start-up
notice absl prints in another form, `WARNING: All log messages before absl::InitializeLog()
…`, is dropped too. Lines following a dropped line without a prefix of their own are kept:
never hide what is not recognisably a log line.

Standard library only: it starts in a few milliseconds with `-I -S`.
"""

from __future__ import annotations

import os
import re
import select
import signal
import sys

# Severity, the month-day and time (absl prints `0000 00:00:<epoch s>` before its log is
# initialised, `MMDD hh:mm:ss` after), thread id, file:line.
_CPP_PREFIX = re.compile(rb"([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ ([^\s\]]+):\d+\] ")
# What a line not yet complete may still turn into: a prefix of `_CPP_PREFIX` or of a notice.
_MAYBE_PREFIX = re.compile(rb"[IWE]\d{0,4}(?: [\d:.]*(?: +\d*(?: [^\s\]]*\]?)?)?)?")
_NOTICES = (b"WARNING: All log messages before absl::InitializeLog() is called are written to "
            b"STDERR",)
KNOWN_HARMLESS_ERRORS = (
    # TensorFlow's oneDNN kernels on a CPU without AVX-512: it falls back to Eigen.
    re.compile(rb"oneDNN supports DT_\w+ only on platforms with AVX-512"),
)
# Harmless only where no NVIDIA driver is installed; with one, a cuInit failure is news.
NO_DRIVER_HARMLESS_ERRORS = (re.compile(rb"failed call to cuInit: "),)
# Written by quiet_startup.flush(): everything before it is out once this process acks it.
FLUSH_MARK = b"\0albert_tf.runtime.stderr_filter.flush\0"
_HOLD_SECONDS = 0.1  # how long an incomplete line that may be a log line waits for the rest


def keep(line: bytes, nvidia_driver: bool) -> bool:
    """Whether a line written to fd 2 (by C++ code or a child process) is shown."""
    text = line.rstrip(b"\r\n")
    if text in _NOTICES:
        return False
    match = _CPP_PREFIX.match(text)
    if match is None or match.group(2).endswith(b".py"):
        return True
    severity, message = match.group(1), text[match.end():]
    if severity in (b"I", b"W"):
        return False
    if severity == b"F":
        return True
    harmless = KNOWN_HARMLESS_ERRORS + (() if nvidia_driver else NO_DRIVER_HARMLESS_ERRORS)
    return not any(pattern.search(message) for pattern in harmless)


def may_be_dropped(partial: bytes) -> bool:
    """Whether an incomplete line could still become one `keep` drops."""
    if _CPP_PREFIX.match(partial) is not None:
        return True
    if len(partial) > 512:
        return False
    return (_MAYBE_PREFIX.fullmatch(partial) is not None
            or any(notice.startswith(partial) for notice in _NOTICES))


class LineFilter:
    """Applies `keep` to a byte stream fed in arbitrary pieces. A line that cannot be a
    dropped one is passed on at once, before its end arrives (progress output stays live);
    one that may be is held until its end."""

    def __init__(self, nvidia_driver: bool):
        self._driver = nvidia_driver
        self._held = bytearray()
        self._passing = False  # inside a line already judged to be kept

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        while data:
            if self._passing:
                end = data.find(b"\n")
                if end < 0:
                    out += data
                    break
                out += data[:end + 1]
                data = data[end + 1:]
                self._passing = False
                continue
            self._held += data
            data = b""
            while (end := self._held.find(b"\n")) >= 0:
                line = bytes(self._held[:end + 1])
                del self._held[:end + 1]
                if keep(line, self._driver):
                    out += line
            if self._held and not may_be_dropped(bytes(self._held)):
                out += self._held
                self._held.clear()
                self._passing = True
        return bytes(out)

    def waiting(self) -> bool:
        """Whether an incomplete line is held that `release` would give up."""
        return bool(self._held) and _CPP_PREFIX.match(bytes(self._held)) is None

    def release(self) -> bytes:
        """After `_HOLD_SECONDS` with no more input: an incomplete line that has not (yet)
        shown a log prefix is not a log line (those are written whole); pass it on."""
        if not self.waiting():
            return b""
        out = bytes(self._held)
        self._held.clear()
        self._passing = True
        return out

    def end(self) -> bytes:
        """At the end of the stream: the last, unterminated line, judged as it is."""
        line = bytes(self._held)
        self._held.clear()
        return line if line and keep(line, self._driver) else b""


def _write_all(fd: int, data: bytes) -> bool:
    while data:
        try:
            data = data[os.write(fd, data):]
        except InterruptedError:
            continue
        except OSError:  # the reader is gone: drop the output, keep draining the pipe
            return False
    return True


def _split_mark(pending: bytes) -> int:
    """Length of the tail of `pending` that may be the start of a FLUSH_MARK."""
    for size in range(min(len(FLUSH_MARK) - 1, len(pending)), 0, -1):
        if pending.endswith(FLUSH_MARK[:size]):
            return size
    return 0


def run(source: int, sink: int, ack: int, nvidia_driver: bool) -> None:
    """Copies `source` to `sink` through a LineFilter until every writer has closed it."""
    line_filter = LineFilter(nvidia_driver)
    open_sink = True
    pending = b""

    def emit(data: bytes) -> None:
        nonlocal open_sink
        if data and open_sink:
            open_sink = _write_all(sink, data)

    while True:
        timeout = _HOLD_SECONDS if line_filter.waiting() else None
        try:
            ready, _, _ = select.select([source], [], [], timeout)
        except InterruptedError:
            continue
        if not ready:
            emit(line_filter.release())
            continue
        try:
            data = os.read(source, 1 << 16)
        except InterruptedError:
            continue
        if not data:
            break
        pending += data
        while (at := pending.find(FLUSH_MARK)) >= 0:
            emit(line_filter.feed(pending[:at]))
            pending = pending[at + len(FLUSH_MARK):]
            _write_all(ack, b".")
        tail = _split_mark(pending)
        emit(line_filter.feed(pending[:len(pending) - tail]))
        pending = pending[len(pending) - tail:]
    emit(line_filter.feed(pending))
    emit(line_filter.end())


def main(argv: list[str]) -> None:
    # The script's Ctrl-C or SIGTERM is for the script: this process ends when the pipe does,
    # after the script's last words are out.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    run(source=0, sink=1, ack=int(argv[1]), nvidia_driver=argv[2] == "1")


if __name__ == "__main__":
    main(sys.argv)
