"""Checkpoints cut short and full disks (docs/faults.md).

A rerun passes over incomplete checkpoints (an .index without its .data, a truncated .data,
a `checkpoint` state file naming a missing prefix) with one warning line and resumes from the
newest complete one: final values identical to an uninterrupted run's. A new checkpoint is
read back before the state file names it or the rotation deletes an older one. A full disk
while writing a checkpoint: exit status 1, one line naming it, no partial file, the previous
checkpoint restores. The side-car evaluator waits for a checkpoint that is not complete.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training import checkpointing
from albert_tf.training.checkpoint_eval import PollSettings, follow_checkpoints
from albert_tf.training.checkpointing import (CheckpointWriteError, TrainingCheckpoint,
                                              checkpoint_problem)
from tests.training import fault_runs, processes
from tests.training.fault_runs import limit_file_size, small_disk


def rerun(flags: list[str], out: str, **kwargs) -> subprocess.CompletedProcess:
    return processes.run(["run_pretraining.py", *flags, f"--output_dir={out}"], timeout=240,
                         **kwargs)


def incomplete_warnings(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines()
            if "Incomplete checkpoint" in line]


def test_index_without_data_and_truncated_data_fall_back(tmp_path, fault_run):
    """ckpt-12 lost its .data, ckpt-8's .data is truncated: one warning naming both, resume
    from ckpt-4, final values identical."""
    flags, reference = fault_run
    expected = fault_runs.checkpoint_values(os.path.join(reference, "model.ckpt-12"))
    out = shutil.copytree(reference, tmp_path / "run")
    os.remove(out / "model.ckpt-12.data-00000-of-00001")
    data = out / "model.ckpt-8.data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) // 2)
    assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-12")  # what TF would pick

    result = rerun(flags, out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    warnings = incomplete_warnings(result)
    assert len(warnings) == 1, warnings
    assert "model.ckpt-12 (" in warnings[0] and "model.ckpt-8 (" in warnings[0]
    assert warnings[0].rstrip().endswith("model.ckpt-4")
    assert "model.ckpt-4 at step 4" in result.stdout + result.stderr
    fault_runs.assert_identical(str(out / "model.ckpt-12"), expected, 60)


def test_state_file_naming_a_missing_prefix_falls_back(tmp_path, fault_run):
    """`checkpoint` names model.ckpt-12, whose files are gone: resume from ckpt-8 (TF's
    latest_checkpoint would find nothing and the run would restart from step 0)."""
    flags, reference = fault_run
    expected = fault_runs.checkpoint_values(os.path.join(reference, "model.ckpt-12"))
    out = shutil.copytree(reference, tmp_path / "run")
    for name in os.listdir(out):
        if name.startswith("model.ckpt-12."):
            os.remove(out / name)
    assert tf.train.latest_checkpoint(str(out)) is None

    result = rerun(flags, out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    warnings = incomplete_warnings(result)
    assert len(warnings) == 1 and "model.ckpt-12 (its .index file is missing)" in warnings[0]
    assert "model.ckpt-8 at step 8" in result.stdout + result.stderr
    fault_runs.assert_identical(str(out / "model.ckpt-12"), expected, 60)


def test_full_disk_while_writing_a_checkpoint(tmp_path, fault_run):
    """Resume from ckpt-4 with room for 60 % of one more checkpoint: exit 1, one line naming
    model.ckpt-8; no file of it left; ckpt-4 still complete, named by the state file."""
    flags, reference = fault_run
    size = os.path.getsize(os.path.join(reference, "model.ckpt-4.data-00000-of-00001"))
    room = size * 6 // 10
    with small_disk(tmp_path / "disk", 2 * size // 1024 + 200) as mounted:
        out = tmp_path / "disk" / "run"
        os.makedirs(out)
        for name in os.listdir(reference):
            if name.startswith("model.ckpt-4."):
                shutil.copy(os.path.join(reference, name), out / name)
        (out / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-4"\n'
                                        'all_model_checkpoint_paths: "model.ckpt-4"\n')
        if mounted:
            with open(tmp_path / "disk" / "filler", "wb") as f:
                f.write(b"\0" * (shutil.disk_usage(out).free - room))
        result = subprocess.run(
            [sys.executable, "run_pretraining.py", *flags, f"--output_dir={out}"],
            cwd=processes.REPO, env=processes.python_env(), capture_output=True, text=True,
            timeout=240, preexec_fn=None if mounted else functools.partial(limit_file_size, room))
        assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
        errors = [line for line in result.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and errors[0].startswith("run_pretraining: error: "), errors
        assert f"{out}/model.ckpt-8: writing the checkpoint of step 8 failed" in errors[0]
        assert ("No space left on device" if mounted else "File too large") in errors[0]
        assert errors[0].endswith("the previous checkpoint " f"{out}/model.ckpt-4 is intact")
        left = sorted(os.listdir(out))
        assert left == ["checkpoint", "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index",
                        "train"], left
        assert checkpoint_problem(str(out / "model.ckpt-4")) is None
        assert tf.train.latest_checkpoint(str(out)) == str(out / "model.ckpt-4")
        fault_runs.assert_identical(str(out / "model.ckpt-4"), fault_runs.checkpoint_values(
            os.path.join(reference, "model.ckpt-4")), 60)


def tiny_checkpoint(directory, max_to_keep: int = 1) -> tuple[TrainingCheckpoint, keras.Model]:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64)
    return TrainingCheckpoint(str(directory), model, optimizer, step, max_to_keep), model


def test_a_new_checkpoint_is_read_back_before_the_rotation(tmp_path, monkeypatch):
    """max_to_keep=1: when the new checkpoint does not read back, the older one stays, the
    state file keeps naming it, and the new one's files are removed."""
    ckpt, model = tiny_checkpoint(tmp_path)
    first = ckpt.save(1)
    model.layers[0].kernel.assign(np.ones((3, 2), "float32"))
    real = checkpointing.checkpoint_problem
    monkeypatch.setattr(checkpointing, "checkpoint_problem", lambda prefix: (
        "simulated read error" if prefix.endswith("-2") else real(prefix)))
    with pytest.raises(CheckpointWriteError, match=r"model.ckpt-2: writing the checkpoint of "
                       r"step 2 failed .*simulated read error.*model.ckpt-1 is intact"):
        ckpt.save(2)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-1.data-00000-of-00001",
                                            "model.ckpt-1.index"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    monkeypatch.setattr(checkpointing, "checkpoint_problem", real)
    assert ckpt.save(3).endswith("model.ckpt-3")  # and now the rotation deletes ckpt-1
    assert fault_runs.checkpoint_steps(tmp_path) == [3]


def test_side_car_waits_for_a_complete_checkpoint(tmp_path):
    """Steps 1 (complete), 2 (.index without .data) and later 3: 1 and 3 are evaluated, 2 is
    logged once and passed over, nothing fails."""
    def write(step: int):
        tf.train.Checkpoint(v=tf.Variable([float(step)])).write(
            str(tmp_path / f"model.ckpt-{step}"))

    write(1)
    write(2)
    os.remove(tmp_path / "model.ckpt-2.data-00000-of-00001")
    now, evaluated, sleeps = [0.0], [], []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds
        if len(sleeps) == 2:
            write(3)

    def listing():
        return sorted(checkpointing.numbered_prefixes(str(tmp_path)).items())

    done = follow_checkpoints(listing, lambda step, prefix: evaluated.append(step), 3, -1,
                              PollSettings(1.0, 30.0), str(tmp_path),
                              ready=lambda prefix: checkpoint_problem(prefix) is None,
                              clock=lambda: now[0], sleep=sleep)
    assert done == evaluated == [1, 3] and len(sleeps) == 2


def test_a_full_disk_elsewhere_is_one_line(capsys):
    """ENOSPC/EFBIG from a writer that does not name its file itself: the scripts' one line
    names the file the OSError carries, exit status 1."""
    from albert_tf import cli

    def run():
        raise OSError(errno.ENOSPC, "No space left on device", "/out/train.tf_record")

    with pytest.raises(SystemExit) as caught:
        cli.run_script("run_classifier", ["run_classifier.py"], run)
    assert caught.value.code == 1
    assert capsys.readouterr().err == ("run_classifier: error: /out/train.tf_record: No space "
                                       "left on device while writing (a full disk or a "
                                       "file-size limit)\n")
    def denied():
        raise OSError(errno.EACCES, "Permission denied")

    with pytest.raises(OSError):  # other OSErrors keep their traceback
        cli.run_script("run_classifier", ["run_classifier.py"], denied)
