"""Helpers of the fault tests (tests/training/test_faults_*.py): tiny runs in subprocesses,
signals at a chosen step, and exact comparisons of checkpoints."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess

import numpy as np
import tensorflow as tf

from tests.training import processes

PAUSE_SCRIPT = ["-m", "tests.training.scripts.pause_at_step"]


def checkpoint_values(prefix: str) -> dict[str, np.ndarray]:
    """Model weights, optimizer slots and the step of one of our checkpoints."""
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "optimizer/", "global_step"))}


def assert_identical(got_prefix: str, expected: dict[str, np.ndarray], minimum: int = 20) -> None:
    """max |Δ| = 0 over every model/optimizer value and the step."""
    got = checkpoint_values(got_prefix)
    assert sorted(got) == sorted(expected) and len(expected) >= minimum
    differing = [name for name in expected if not np.array_equal(got[name], expected[name])]
    assert not differing, f"{len(differing)} value(s) differ, e.g. {differing[:3]}"


def signal_at_step(args: list[str], step: int, signum: int, timeout: float = 240,
                   **env: str) -> tuple[int, str]:
    """Runs `python -m pause_at_step <args>`, sends `signum` once step `step` is logged (the run
    waits there for it), returns (exit status, output)."""
    run = processes.Output(processes.start([*PAUSE_SCRIPT, *args], TEST_PAUSE_AT_STEP=str(step),
                                           **env))
    try:
        assert run.wait_for(f"PAUSED AT STEP {step}", timeout), "".join(run.lines[-40:])
        os.kill(run.process.pid, signum)
        return run.finish(timeout=120)
    finally:
        run.process.kill()


def start_workers(flags: list[str], out, pause_worker: int | None = None, step: int = 0
                  ) -> list[processes.Output]:
    """Two MultiWorkerMirrored workers on 127.0.0.1 running `run_pretraining.py <flags>` into
    `out`; worker `pause_worker` pauses at `step` (see PAUSE_SCRIPT)."""
    ports = [processes.free_port() for _ in range(2)]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    workers = []
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        pause = str(step if index == pause_worker else 0)
        workers.append(processes.Output(processes.start(
            [*PAUSE_SCRIPT, "run_pretraining.py", *flags, f"--output_dir={out}",
             "--distribution_strategy=multi_worker_mirrored"],
            TF_CONFIG=tf_config, TEST_PAUSE_AT_STEP=pause)))
    return workers


def finish_all(workers: list[processes.Output], timeout: float = 300) -> list[tuple[int, str]]:
    """(exit status, output) of each worker; none is left running."""
    try:
        return [worker.finish(timeout) for worker in workers]
    finally:
        for worker in workers:
            worker.process.kill()


def checkpoint_steps(directory) -> list[int]:
    """The steps of the `model.ckpt-<step>.index` files in `directory`."""
    return sorted(int(name[len("model.ckpt-"):-len(".index")]) for name in os.listdir(directory)
                  if name.startswith("model.ckpt-") and name.endswith(".index"))


@contextlib.contextmanager
def small_disk(directory, size_kib: int):
    """Yields True when `directory` is now a tmpfs of `size_kib` KiB (mounting is allowed:
    root with CAP_SYS_ADMIN), else False: the test then limits the child's file size instead
    (`limit_file_size`), so the same write fails the same way and is checked the same way."""
    os.makedirs(directory)
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs",
                                  str(directory)], capture_output=True).returncode == 0
    except OSError:  # no mount command
        mounted = False
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(directory)], check=True)


def limit_file_size(limit: int) -> None:
    """In the child: a write past `limit` bytes fails with EFBIG (SIGXFSZ ignored), as a
    write to a full disk fails with ENOSPC."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
