"""Side-car polling (`checkpoint_eval.follow_checkpoints`) on a fake clock and directory:
each checkpoint evaluated once in step order, stop at the final step, timeout, restart;
and `CheckpointEvaluator`'s state across a restart, with files but no model."""

from __future__ import annotations

import os

import pytest

from albert_tf.training.checkpoint_eval import (CheckpointWaitTimeout, PollSettings,
                                                follow_checkpoints)


class FakeRun:
    """A training run on a fake clock: `schedule` maps a time to the steps saved then."""

    def __init__(self, schedule: dict[float, list[int]]):
        self.schedule = schedule
        self.now = 0.0
        self.sleeps: list[float] = []
        self.evaluated: list[tuple[int, str, float]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def list_checkpoints(self) -> list[tuple[int, str]]:
        steps = [s for t, saved in self.schedule.items() if t <= self.now for s in saved]
        return [(s, f"out/model.ckpt-{s}") for s in reversed(steps)]  # order must not matter

    def evaluate(self, step: int, prefix: str) -> None:
        self.evaluated.append((step, prefix, self.now))
        self.now += 0.5  # evaluating takes time too

    def follow(self, final_step: int, last_evaluated: int = -1, poll: float = 1.0,
               timeout: float = 10.0, **kwargs) -> list[int]:
        return follow_checkpoints(self.list_checkpoints, self.evaluate, final_step,
                                  last_evaluated, PollSettings(poll, timeout), "out",
                                  clock=self.clock, sleep=self.sleep, **kwargs)


def test_each_checkpoint_once_in_order_until_the_final_step():
    run = FakeRun({3.0: [2], 3.2: [4], 7.0: [6, 8], 20.0: [10]})
    assert run.follow(final_step=8) == [2, 4, 6, 8]
    assert [(s, p) for s, p, _ in run.evaluated] == [(2, "out/model.ckpt-2"),
                                                     (4, "out/model.ckpt-4"),
                                                     (6, "out/model.ckpt-6"),
                                                     (8, "out/model.ckpt-8")]
    # Step 4 appeared while 2 was evaluated: taken at once, no sleep in between.
    assert [t for _, _, t in run.evaluated] == [3.0, 3.5, 7.0, 7.5]
    assert run.sleeps == [1.0] * 6 and run.now == 8.0  # 3 polls, 3 more; stops after step 8


def test_a_checkpoint_past_the_final_step_ends_the_run():
    run = FakeRun({0.0: [5, 12]})
    assert run.follow(final_step=10) == [5, 12] and run.sleeps == []


def test_timeout_names_the_directory_the_step_and_the_flag():
    run = FakeRun({2.0: [2]})
    with pytest.raises(CheckpointWaitTimeout) as raised:
        run.follow(final_step=4, poll=3.0, timeout=10.0)
    assert str(raised.value) == (
        "no new checkpoint in out for 10s (--eval_timeout_secs) while waiting for a checkpoint "
        "after step 2 (the run ends at step 4, --train_step); is the trainer running there, "
        "with the same --train_step?")
    assert [s for s, _, _ in run.evaluated] == [2]
    # The clock restarts after each evaluation; the last sleep is cut to the timeout.
    assert run.sleeps == [3.0, 3.0, 3.0, 3.0, 1.0] and run.now == 3.5 + 10.0


def test_timeout_before_any_checkpoint():
    run = FakeRun({})
    with pytest.raises(CheckpointWaitTimeout, match=r"waiting for the first checkpoint .* "
                                                    r"--num_train_steps\? Or not\.$"):
        run.follow(final_step=4, poll=4.0, timeout=10.0, final_step_flag="--num_train_steps",
                   hint=" Or not.")
    assert run.sleeps == [4.0, 4.0, 2.0] and run.evaluated == []


def test_restart_skips_what_was_evaluated():
    run = FakeRun({0.0: [2, 4], 5.0: [6]})
    assert run.follow(final_step=6, last_evaluated=4) == [6]
    assert run.sleeps == [1.0] * 5


def test_restart_after_the_final_step_does_nothing():
    run = FakeRun({0.0: [2, 4]})
    assert run.follow(final_step=4, last_evaluated=4) == []
    assert run.sleeps == [] and run.evaluated == []


@pytest.mark.parametrize("poll,timeout,flag", [(0.0, 5.0, "eval_poll_secs"),
                                                (1.0, float("inf"), "eval_timeout_secs"),
                                                (float("nan"), 5.0, "eval_poll_secs"),
                                                (1.0, -2.0, "eval_timeout_secs")])
def test_bad_settings_name_the_flag(poll, timeout, flag):
    with pytest.raises(ValueError, match=f"^--{flag}=.*: expected a finite number > 0$"):
        PollSettings(poll, timeout)


# ----- the evaluator the scripts follow with: state, restart, deleted checkpoints -----

def _save(directory, step):
    for suffix in (".index", ".data-00000-of-00001"):
        with open(os.path.join(directory, f"model.ckpt-{step}{suffix}"), "w") as f:
            f.write(f"step {step}")


def _evaluator(directory, values, restored, **kwargs):
    from albert_tf.training.checkpoint_eval import CheckpointEvaluator

    return CheckpointEvaluator(str(directory), "masked_lm_accuracy",
                               lambda step: {"masked_lm_accuracy": values[step]},
                               restored.append, **kwargs)


def test_pretraining_style_evaluator_resumes_and_keeps_checkpoints(tmp_path):
    values = {2: 0.25, 4: 0.5, 6: 0.375}
    restored: list[str] = []
    for step in (2, 4):
        _save(tmp_path, step)
    first = _evaluator(tmp_path, values, restored, prune=False, best_lines=False)
    for step, prefix in first.pending():
        first.evaluate(step, prefix)
    _save(tmp_path, 6)
    again = _evaluator(tmp_path, values, restored, prune=False, best_lines=False)  # a restart
    assert (again.last_step, again.best_step, again.best_value) == (4, 4, 0.5)
    assert [s for s, _ in again.pending()] == [6]
    again.evaluate(6, str(tmp_path / "model.ckpt-6"))
    assert [os.path.basename(p) for p in restored] == ["model.ckpt-2", "model.ckpt-4",
                                                       "model.ckpt-6"]
    assert sorted(os.listdir(tmp_path)) == [  # nothing pruned; the best copied
        "best_trial.txt", "eval_results.txt", "model.ckpt-2.data-00000-of-00001",
        "model.ckpt-2.index", "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index",
        "model.ckpt-6.data-00000-of-00001", "model.ckpt-6.index",
        "model.ckpt-best.data-00000-of-00001", "model.ckpt-best.index"]
    with open(tmp_path / "model.ckpt-best.index") as f:
        assert f.read() == "step 4"
    saved = [f"saved {tmp_path}/model.ckpt-{s}{x} to {tmp_path}/model.ckpt-best{x}"
             for s in (2, 4) for x in (".data-00000-of-00001", ".index")]
    with open(tmp_path / "eval_results.txt") as f:
        assert f.read().splitlines() == [
            "global_step = 2", *saved[:2], "masked_lm_accuracy = 0.25",  # (Q17)
            "global_step = 4", *saved[2:], "masked_lm_accuracy = 0.5",
            "global_step = 6", "masked_lm_accuracy = 0.375"]
    with open(tmp_path / "best_trial.txt") as f:
        assert f.read() == "6:4:0.5\n"


def test_a_checkpoint_deleted_before_evaluation_is_skipped(tmp_path):
    import tensorflow as tf

    _save(tmp_path, 2)
    prefix = str(tmp_path / "model.ckpt-2")
    evaluator = _evaluator(tmp_path, {2: 0.5, 4: 0.25}, [], prune=False)
    evaluator.evaluate(2, prefix)
    _save(tmp_path, 4)
    gone = str(tmp_path / "model.ckpt-4")

    def restore_vanished(path):  # the trainer deleted it between listing and reading
        for name in os.listdir(tmp_path):
            if name.startswith("model.ckpt-4."):
                os.remove(tmp_path / name)
        raise tf.errors.NotFoundError(None, None, f"{path}: not found")

    evaluator.restore_fn = restore_vanished
    assert evaluator.evaluate_if_present(4, gone) is None
    assert evaluator.last_step == 4 and evaluator.best_step == 2
    with open(tmp_path / "best_trial.txt") as f:
        assert f.read() == "4:2:0.5\n"
