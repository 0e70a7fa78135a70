"""Exact resume: SIGKILL after the 2nd checkpoint, same command again == uninterrupted run."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import tiny_config
from tests.training import processes

# Slow tier (make test-all): SIGKILL and resume of a real pretraining process.
pytestmark = pytest.mark.slow


def model_values(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith(("model/", "optimizer/", "global_step"))}


def test_sigkill_after_second_checkpoint_resumes_exactly(tmp_path, pretraining_files):
    _, _, common = pretraining_files
    config = tmp_path / "dropout_config.json"  # dropout on: RNG state must resume too
    tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1).to_json_file(config)
    flags = [*common, f"--albert_config_file={config}", "--deterministic",
             "--train_batch_size=8", "--num_train_steps=12", "--save_checkpoints_steps=4",
             "--iterations_per_loop=2", "--log_steps=2"]
    reference = processes.start(["run_pretraining.py", *flags, f"--output_dir={tmp_path / 'ref'}"])
    command = ["-m", "tests.training.scripts.run_with_hooks", *flags,
               f"--output_dir={tmp_path / 'run'}", "--test_pause_at_checkpoint=8"]
    victim = processes.start(command)
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
        assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith("model.ckpt-8")

        resumed = processes.run(command, timeout=240)
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
        assert "Resuming from checkpoint" in resumed.stdout + resumed.stderr
        assert "model.ckpt-8 at step 8" in resumed.stdout + resumed.stderr
        output = reference.communicate(timeout=240)[0]
        assert reference.returncode == 0, output[-3000:]
    finally:
        victim.kill()
        reference.kill()
    expected = model_values(str(tmp_path / "ref" / "model.ckpt-12"))
    got = model_values(str(tmp_path / "run" / "model.ckpt-12"))
    assert sorted(got) == sorted(expected) and len(expected) > 60
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, atol=1e-6, rtol=0, err_msg=name)
