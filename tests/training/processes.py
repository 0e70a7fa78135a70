"""Helpers for tests that run training in subprocesses (fresh TF runtimes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The repository, then tests/runtime_site, which hides the test-only scikit-learn as a runtime
# install lacks it (Keras would import it at every start-up: tests/runtime_site/sklearn).
RUNTIME_SITE = os.path.join(REPO, "tests", "runtime_site")
RUNTIME_PYTHONPATH = os.pathsep.join([REPO, RUNTIME_SITE])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=RUNTIME_PYTHONPATH)
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def start(module_or_script: list[str], **env: str) -> subprocess.Popen:
    """Starts `python <args>` in the repository root, stdout+stderr piped together."""
    return subprocess.Popen([sys.executable, *module_or_script], cwd=REPO, env=python_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run(args: list[str], timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, env=python_env(**env),
                          capture_output=True, text=True, timeout=timeout)


class Output:
    """A started process's output, read line by line on a thread (the pipe never fills),
    so a test can wait for a line while the process runs."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float) -> bool:
        """True once a line containing `text` was printed; False if the process ended or
        `timeout` seconds passed first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._changed.wait(min(left, 1.0))
            return True

    def finish(self, timeout: float) -> tuple[int, str]:
        """(exit status, everything printed), after the process ended (killed at `timeout`)."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._thread.join(10)
        return self.process.returncode, "".join(self.lines)


def trainer_and_side_car(trainer_args: list[str], evaluator_args: list[str],
                         timeout: float = 180) -> str:
    """Starts the side-car evaluator, then the trainer, on the same output_dir; asserts both
    exit 0 and returns the evaluator's output."""
    evaluator = Output(start(evaluator_args))
    trainer = Output(start(trainer_args))
    status, log = trainer.finish(timeout=timeout)
    assert status == 0, log[-3000:]
    status, log = evaluator.finish(timeout=60)
    assert status == 0, log[-3000:]
    return log
