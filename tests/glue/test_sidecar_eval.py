"""run_classifier as the original's side-car evaluator: a trainer process and an
evaluator process (--do_eval, no --do_train) started together on the same output_dir: the
evaluator evaluates each checkpoint once as it appears, keeps the best, and exits when the
trainer's last step is evaluated."""

from __future__ import annotations

import os

import pytest

from tests.training import processes

# Slow tier (make test-all): a trainer and an evaluator process side by side.
pytestmark = pytest.mark.slow

STEPS, EVERY = 6, 2


def _blocks(path: str) -> list[dict[str, str]]:
    """eval_results.txt → one {key: value} per evaluation (blocks end with the separator)."""
    blocks, block = [], {}
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("----"):
                blocks.append(block)
                block = {}
            else:
                key, value = line.split(" = ", 1)
                block[key] = value
    assert block == {}
    return blocks


def test_evaluator_follows_the_trainer(glue_dir, tiny_config_file, text_assets, tmp_path):
    out = tmp_path / "out"
    common = ["run_classifier.py", "--task_name=MRPC", f"--data_dir={glue_dir}",
              f"--albert_config_file={tiny_config_file}",
              f"--spm_model_file={text_assets.spm_model}", f"--output_dir={out}",
              "--max_seq_length=32", "--train_batch_size=4", "--eval_batch_size=3",
              "--learning_rate=1e-3", f"--train_step={STEPS}",
              f"--save_checkpoints_steps={EVERY}", "--log_steps=2", "--seed=1"]
    log = processes.trainer_and_side_car(
        [*common, "--do_train"], [*common, "--do_eval", "--eval_poll_secs=1", "--eval_timeout_secs=60"])
    assert f"Reached the final step {STEPS}: 3 checkpoint(s) evaluated" in log

    blocks = _blocks(str(out / "eval_results.txt"))
    assert [int(b["global_step"]) for b in blocks] == [2, 4, 6]  # each step once
    accuracies = [float(b["eval_accuracy"]) for b in blocks]
    best = max(range(3), key=lambda i: (accuracies[i], -i))  # the first of the highest
    # Each block's `best` is the best before it (None before the first).
    assert [b["best"] for b in blocks] == [
        "None", *(str(max(accuracies[:i])) for i in (1, 2))]
    with open(out / "best_trial.txt") as f:
        assert f.read() == f"6:{2 * (best + 1)}:{accuracies[best]}\n"
    names = set(os.listdir(out))
    assert {"model.ckpt-best.index", "model.ckpt-6.index"} <= names
    assert not {"model.ckpt-2.index", "model.ckpt-4.index"} & names  # pruned, as the original
