"""Fixtures built once per test run, shared by pytest-xdist's worker processes.

A session fixture is built once per worker; the long ones (a subprocess training two models, the
uninterrupted run the fault tests compare with, the text assets) are wanted by test files that
land on different workers. `run_once` builds them in the run's own directory (above the
workers' ones) under a file lock; the other workers read the result back.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Callable

import pytest
from filelock import FileLock


def run_directory(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The directory of the whole run: the workers' common parent under xdist."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def run_once(tmp_path_factory: pytest.TempPathFactory, name: str,
             build: Callable[[pathlib.Path], Any]) -> Any:
    """`build(directory)`'s JSON-able result, computed by the first worker that asks (in
    `directory`, which the result may name) and read back by the others."""
    directory = run_directory(tmp_path_factory) / name
    result_file = directory / "result.json"
    with FileLock(f"{directory}.lock"):
        if result_file.exists():
            return json.loads(result_file.read_text(encoding="utf-8"))
        directory.mkdir(exist_ok=True)
        result = build(directory)
        result_file.write_text(json.dumps(result), encoding="utf-8")
    return result
