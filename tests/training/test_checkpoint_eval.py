"""CheckpointEvaluator's choices (faithfulness §8.6): which checkpoint is best, what is kept,
and how a restarted evaluation resumes."""

from __future__ import annotations

import logging
import math
import os

import pytest
import tensorflow as tf

from albert_tf.training.checkpoint_eval import (BEST_PREFIX, RESULTS_FILE, STATE_FILE,
                                                  CheckpointEvaluator, numbered_checkpoints)


class FakeTask:
    """A one-variable "model": checkpoint `step` holds the value `step`; its metric is scripted."""

    def __init__(self, directory: str, metrics: dict[int, float]):
        self.directory = directory
        self.metrics = metrics
        self.weight = tf.Variable(0.0)
        self.evaluated: list[int] = []

    def save(self, step: int) -> str:
        self.weight.assign(float(step))
        return tf.train.Checkpoint(weight=self.weight).write(
            os.path.join(self.directory, f"model.ckpt-{step}"))

    def restore(self, prefix: str) -> None:
        tf.train.Checkpoint(weight=self.weight).read(prefix).assert_consumed()

    def evaluate(self, step: int) -> dict[str, float]:
        assert float(self.weight.numpy()) == step  # the checkpoint's own weights are loaded
        self.evaluated.append(step)
        return {"f1": self.metrics[step]}

    def evaluator(self) -> CheckpointEvaluator:
        return CheckpointEvaluator(self.directory, "f1", self.evaluate, self.restore)


def _stored_weight(prefix: str) -> float:
    reader = tf.train.load_checkpoint(prefix)
    (name,) = [n for n in reader.get_variable_to_shape_map() if n.startswith("weight")]
    return float(reader.get_tensor(name))


def _state(directory: str) -> str:
    with open(os.path.join(directory, STATE_FILE)) as f:
        return f.read().strip()


def test_nan_never_wins_and_the_best_is_copied(tmp_path):
    task = FakeTask(str(tmp_path), {1: math.nan, 2: 0.4, 3: math.nan, 4: 0.9, 5: 0.6})
    for step in task.metrics:
        task.save(step)
    evaluator = task.evaluator()
    results = evaluator.evaluate_pending()
    assert [r["global_step"] for r in results] == [1, 2, 3, 4, 5] == task.evaluated
    assert (evaluator.best_step, evaluator.best_value) == (4, 0.9)
    best = os.path.join(str(tmp_path), BEST_PREFIX)
    assert _stored_weight(best) == 4.0  # model.ckpt-best holds step 4's weights
    assert _state(str(tmp_path)) == "5:4:0.9"
    # Evaluated checkpoints are pruned except the newest (kept for resuming training).
    assert [s for s, _ in numbered_checkpoints(str(tmp_path))] == [5]
    with open(os.path.join(str(tmp_path), RESULTS_FILE)) as f:
        blocks = f.read().split("-" * 40 + "\n")
    # The `best = …` line of each block is the best value *before* that result (as the original).
    assert [b.splitlines()[-1] for b in blocks[:-1]] == [
        "best = None", "best = None", "best = 0.4", "best = 0.4", "best = 0.9"]


def test_a_nan_first_result_is_no_best(tmp_path):
    task = FakeTask(str(tmp_path), {1: math.nan})
    task.save(1)
    evaluator = task.evaluator()
    evaluator.evaluate_pending()
    assert evaluator.best_step is None
    assert not os.path.exists(os.path.join(str(tmp_path), BEST_PREFIX + ".index"))


def test_the_first_result_is_a_best_even_below_zero(tmp_path):
    """The original starts from best 0, so a CoLA run whose every MCC is negative had no best."""
    task = FakeTask(str(tmp_path), {2: -0.25, 4: -0.5})
    task.save(2)
    task.save(4)
    evaluator = task.evaluator()
    evaluator.evaluate_pending()
    assert (evaluator.best_step, evaluator.best_value) == (2, -0.25)
    assert _stored_weight(os.path.join(str(tmp_path), BEST_PREFIX)) == 2.0


def test_resume_from_best_trial_skips_evaluated_steps(tmp_path, caplog):
    task = FakeTask(str(tmp_path), {1: 0.5, 2: 0.7, 3: 0.6, 4: 0.8})
    task.save(1)
    task.save(2)
    task.evaluator().evaluate_pending()
    assert task.evaluated == [1, 2] and _state(str(tmp_path)) == "2:2:0.7"

    task.save(3)
    task.save(4)
    with caplog.at_level(logging.INFO, logger="absl"):
        restarted = task.evaluator()  # a new process: state read from best_trial.txt
        assert (restarted.last_step, restarted.best_step, restarted.best_value) == (2, 2, 0.7)
        assert [s for s, _ in restarted.pending()] == [3, 4]
        # Issue 28: said when an evaluation runs, not when the evaluator is made (a run that
        # only exports makes one too), and once.
        assert "Resuming evaluation" not in caplog.text
        restarted.evaluate_pending()
    assert caplog.text.count("Resuming evaluation") == 1
    assert "Resuming evaluation after step 2 (best f1 = 0.7 at step 2)" in caplog.text
    assert task.evaluated == [1, 2, 3, 4]  # 1 and 2 not redone
    assert (restarted.best_step, restarted.best_value) == (4, 0.8)
    assert _stored_weight(os.path.join(str(tmp_path), BEST_PREFIX)) == 4.0
    assert restarted.pending() == []


def test_a_corrupt_state_file_is_named(tmp_path):
    with open(os.path.join(str(tmp_path), STATE_FILE), "w") as f:
        f.write("three:two\n")
    with pytest.raises(ValueError, match=r"best_trial\.txt: expected 'global_step:best_step:"):
        FakeTask(str(tmp_path), {}).evaluator()


def test_weights_that_are_no_checkpoint_are_reported_but_never_best(tmp_path):
    task = FakeTask(str(tmp_path), {0: 0.3})
    results = task.evaluator().evaluate(0, None, restore=False)
    assert results == {"f1": 0.3, "global_step": 0}
    assert not os.path.exists(os.path.join(str(tmp_path), STATE_FILE))
    assert not os.path.exists(os.path.join(str(tmp_path), BEST_PREFIX + ".index"))
