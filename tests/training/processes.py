"""Helpers for tests that run training in subprocesses (fresh TF runtimes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)
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
