"""Preemption (docs/faults.md): SIGTERM at a step that is no checkpoint step → one checkpoint
of that step, one line naming it, exit status 143; the same command resumes, and the final
weights and optimizer state equal an uninterrupted run's exactly (dropout on, so the RNG
state must resume too). SIGINT in one process: status 130, same checkpoint.

run_pretraining is the script signalled here. run_classifier's SIGTERM-and-resume test was
removed to keep `make test-all` within 20 minutes: its scripts stop and resume through the same
Trainer (albert_tf/training/preemption.py) this file's tests check, and a fine-tuning run's
resume (re-evaluation, keep-best) is covered by tests/test_remote_paths.py::
test_resume_and_keep_best_behave_the_same_on_local_disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.training import fault_runs, processes

# Slow tier (make test-all): scripts signalled and resumed in subprocesses.
pytestmark = pytest.mark.slow

def preempt_and_resume(command: list[str], out, step: int) -> None:
    """SIGTERM at `step` (no checkpoint step): exit 143, one line naming the one new
    checkpoint, of `step`; the same command again resumes from it and ends with status 0."""
    status, log = fault_runs.signal_at_step(command, step, signal.SIGTERM)
    assert status == 143, log[-3000:]
    saved = [line for line in log.splitlines() if f"model.ckpt-{step} " in line]
    assert len(saved) == 1 and "SIGTERM" in saved[0] and "status 143" in saved[0], log[-3000:]
    assert max(fault_runs.checkpoint_steps(out)) == step
    resumed = processes.run([*fault_runs.PAUSE_SCRIPT, *command], timeout=240,
                            TEST_PAUSE_AT_STEP=str(step))
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"model.ckpt-{step} at step {step}" in resumed.stdout + resumed.stderr


def test_sigterm_pretraining_resumes_exactly(tmp_path, fault_run):
    flags, reference = fault_run
    out = tmp_path / "run"
    preempt_and_resume(["run_pretraining.py", *flags, f"--output_dir={out}"], out, step=6)
    fault_runs.assert_identical(str(out / "model.ckpt-12"), fault_runs.checkpoint_values(
        os.path.join(reference, "model.ckpt-12")), 60)


@pytest.fixture(scope="module")
def in_own_session(tmp_path_factory) -> tuple[dict, str]:
    """tests/training/scripts/sigint_in_process.py run once in a new session (its signals stay
    there): (its JSON report, the output_dir of its training)."""
    output_dir = tmp_path_factory.mktemp("sigint")
    result = subprocess.run([sys.executable, "tests/training/scripts/sigint_in_process.py",
                             str(output_dir)],
                            cwd=processes.REPO, env=processes.python_env(), capture_output=True,
                            text=True, timeout=240, start_new_session=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), output_dir


def test_sigint_in_process_saves_the_last_step(in_own_session):
    """Ctrl-C during Trainer.train (in a process of its own): checkpoint of step 3 (steps of 1,
    checkpoints every 5), TrainingPreempted with status 130; the previous handler is back
    afterwards."""
    reports, tmp_path = in_own_session
    assert reports["sigint"] == {"exit_status": 130, "step": 3,
                                 "checkpoint": str(tmp_path / "model.ckpt-3"),
                                 "handler_restored": True}
    assert fault_runs.checkpoint_steps(tmp_path) == [3]
    values = fault_runs.checkpoint_values(str(tmp_path / "model.ckpt-3"))
    assert int(values["global_step/.ATTRIBUTES/VARIABLE_VALUE"]) == 3


def test_signal_watch_and_local_guard(in_own_session):
    """The watch records the first signal; the guard saves then raises, else runs (in a
    process of its own)."""
    report = in_own_session[0]["watch"]
    assert report == {
        "active": True, "runs_before": True, "received": signal.SIGTERM,
        "preempted": report.get("preempted", ""), "saved": 1, "interrupted": True,
        "statuses": [143, 130, 143], "sigterm_restored": True}
    assert report["preempted"].startswith("SIGTERM: saved checkpoint /x/model.ckpt-7")
