"""Exact resume: SIGKILL after the 2nd checkpoint, same command again == uninterrupted run."""

from __future__ import annotations

import os
import signal

import pytest
import tensorflow as tf

from tests.training import fault_runs, processes

# Slow tier (make test-all): SIGKILL and resume of a real pretraining process.
pytestmark = pytest.mark.slow


def test_sigkill_after_second_checkpoint_resumes_exactly(tmp_path, fault_run):
    """The fault tests' uninterrupted run (dropout on: the RNG state must resume too) is the
    reference; this run calls the loop 2 steps at a time, which must not change the values."""
    flags, reference = fault_run
    command = [*fault_runs.PAUSE_SCRIPT, "run_pretraining.py", *flags, "--iterations_per_loop=2",
               "--log_steps=2", f"--output_dir={tmp_path / 'run'}"]
    pause = {"TEST_PAUSE_AT_STEP": "0", "TEST_PAUSE_AT_CHECKPOINT": "8"}
    victim = processes.start(command, **pause)
    try:
        lines = []
        for line in victim.stdout:
            lines.append(line)
            if line.startswith("PAUSED AT CHECKPOINT 8"):
                break
        else:
            raise AssertionError("the run ended before its 2nd checkpoint:\n" + "".join(lines[-50:]))
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        assert victim.returncode == -signal.SIGKILL
    finally:
        victim.kill()
    assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith("model.ckpt-8")

    resumed = processes.run(command, timeout=240, **pause)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "Resuming from checkpoint" in resumed.stdout + resumed.stderr
    assert "model.ckpt-8 at step 8" in resumed.stdout + resumed.stderr
    fault_runs.assert_identical(str(tmp_path / "run" / "model.ckpt-12"),
                                fault_runs.checkpoint_values(
                                    os.path.join(reference, "model.ckpt-12")), 60)
