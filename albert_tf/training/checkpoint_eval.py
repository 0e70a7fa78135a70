"""Checkpoint evaluation: each saved checkpoint evaluated once, the best kept, and the side-car
that follows a trainer's checkpoints to its final step (faithfulness §6.4, §8.6).

Evaluating, as the original: each `model.ckpt-<step>` in output_dir is evaluated once, in step
order; its metrics, a `best = …` line (the best value before it) and a separator are appended
to `eval_results.txt`; progress is kept in `best_trial.txt` as
`global_step:best_step:best_value` so a restarted evaluation resumes; evaluated checkpoints
that are not the newest are deleted (fine-tuning); the best ends up as `model.ckpt-best.*`.
Differences, on purpose: the best is *copied* to `model.ckpt-best` as soon as it is found
(rather than renamed at the end), so a crash never loses it; the newest numbered checkpoint
is kept so training can resume; the first result is always a best (the original starts from
0, so a CoLA run whose every MCC is negative had no best checkpoint and predict failed); a
NaN metric never wins.

Following, as the original's `--do_eval` without `--do_train` beside a trainer (a TPU trains,
a CPU job evaluates): `follow_checkpoints` polls `output_dir`, hands each step past the last
one evaluated to `evaluate(step, prefix)` exactly once, in step order, sleeps `poll_secs`
between looks and stops once the evaluated step reaches the run's last step; unlike the
original, which waits forever, it gives up with `CheckpointWaitTimeout` after `timeout_secs`
without a new checkpoint. A checkpoint that is not complete yet (still being written, or cut
short by a killed trainer) is not evaluated: the loop waits for it, or passes over it once a
newer complete one is there (docs/faults.md). `follow_training` joins the two for every task
(run_pretraining, run_classifier, run_race).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import time
from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf
from absl import logging

from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.training.checkpointing import checkpoint_problem
from albert_tf.training.errors import CheckpointWaitTimeout

BEST_PREFIX = "model.ckpt-best"
RESULTS_FILE = "eval_results.txt"
STATE_FILE = "best_trial.txt"
SEPARATOR = "-" * 40
_NUMBERED = re.compile(r"^model\.ckpt-(\d+)\.index$")
_COPY_CHUNK = 16 * 2**20


def _write_atomic(path: str, text: str) -> None:
    with atomic_file(path) as f:
        f.write(text)


def result_lines(results: Mapping[str, Any]) -> list[str]:
    """`key = value` lines, sorted by key, as the original's eval_results.txt."""
    return [f"{key} = {results[key]}" for key in sorted(results)]


def write_eval_results(path: str, results: Mapping[str, Any]) -> None:
    """`results` as `result_lines` in `path`, written atomically (one evaluation's file)."""
    _write_atomic(path, "".join(line + "\n" for line in result_lines(results)))


def numbered_checkpoints(directory: str) -> list[tuple[int, str]]:
    """(step, prefix) of every `model.ckpt-<step>` in `directory`, by step."""
    if not tf.io.gfile.isdir(directory):
        return []
    found = []
    for name in tf.io.gfile.listdir(directory):
        match = _NUMBERED.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(directory, name[:-len(".index")])))
    return sorted(found)


def copy_checkpoint(source: str, target: str) -> list[tuple[str, str]]:
    """Copies a checkpoint's files to a new prefix, the index last; returns (from, to) pairs."""
    files = tf.io.gfile.glob(source + ".*")
    if not any(name.endswith(".index") for name in files):
        raise tf.errors.NotFoundError(None, None, f"{source}.index: not found")
    copied = []
    for name in sorted(files, key=lambda f: f.endswith(".index")):
        suffix = name[len(source):]
        # Copied by content: tf.io.gfile.copy would keep the source's mode, not the umask's.
        with tf.io.gfile.GFile(name, "rb") as original, atomic_file(target + suffix, "wb") as out:
            shutil.copyfileobj(original, out, _COPY_CHUNK)
        copied.append((name, target + suffix))
    return copied


def delete_checkpoint(prefix: str) -> None:
    for name in tf.io.gfile.glob(prefix + ".*"):
        tf.io.gfile.remove(name)


class CheckpointEvaluator:
    """Evaluates checkpoints of `output_dir` and tracks the best by `metric_key`.

    Args:
      output_dir: where the checkpoints, eval_results.txt and best_trial.txt live.
      metric_key: the task's selection metric (higher is better).
      evaluate_fn: (step) → metrics of the weights currently in the model.
      restore_fn: (checkpoint prefix) → None, loads a checkpoint's weights into the model.
      prune: delete evaluated checkpoints but the newest (fine-tuning, as the original);
        pretraining keeps them (its trainer's keep_checkpoint_max decides).
      best_lines: end each block with `best = …` and a separator (run_classifier,
        run_race); False writes the original run_pretraining's `saved <file> to <file>`
        lines instead when a checkpoint becomes the best, after the block's first line
        (its copy ran inside the loop over the metrics, Q17).
    """

    def __init__(self, output_dir: str, metric_key: str,
                 evaluate_fn: Callable[[int], Mapping[str, float]],
                 restore_fn: Callable[[str], None], prune: bool = True,
                 best_lines: bool = True):
        self.output_dir = output_dir
        self.metric_key = metric_key
        self.evaluate_fn = evaluate_fn
        self.restore_fn = restore_fn
        self.prune = prune
        self.best_lines = best_lines
        self.last_step, self.best_step, self.best_value = -1, None, None
        self.best_results: dict[str, float] | None = None
        self._resumed_unlogged = False  # best_trial.txt was read; said when evaluation starts
        self._read_state()

    @property
    def best_path(self) -> str:
        return os.path.join(self.output_dir, BEST_PREFIX)

    def _read_state(self) -> None:
        path = os.path.join(self.output_dir, STATE_FILE)
        if not tf.io.gfile.exists(path):
            return
        with tf.io.gfile.GFile(path) as f:
            text = f.read().strip()
        try:
            last, best_step, best_value = text.split(":")
            self.last_step, self.best_step = int(last), int(best_step)
            self.best_value = float(best_value)
        except ValueError:
            raise ValueError(f"{path}: expected 'global_step:best_step:best_value', "
                             f"got {text!r}") from None
        self._resumed_unlogged = True

    def log_resume(self) -> None:
        """Says, once and only when an evaluation runs, that it resumes after the steps
        best_trial.txt records (a run that only predicts or exports evaluates nothing)."""
        if self._resumed_unlogged:
            self._resumed_unlogged = False
            logging.info("Resuming evaluation after step %d (best %s = %s at step %d)",
                         self.last_step, self.metric_key, self.best_value, self.best_step)

    def _is_better(self, value: float) -> bool:
        if value is None or math.isnan(value):
            return False
        return self.best_value is None or math.isnan(self.best_value) or value > self.best_value

    def pending(self) -> list[tuple[int, str]]:
        """Checkpoints not evaluated yet, by step."""
        return [(s, p) for s, p in numbered_checkpoints(self.output_dir) if s > self.last_step]

    def evaluate(self, step: int, prefix: str | None, restore: bool = True) -> dict[str, float]:
        """Evaluates one checkpoint (restoring it first unless its weights are loaded).

        `prefix` None evaluates the model's current weights without recording a best.
        """
        self.log_resume()
        if restore and prefix:
            self.restore_fn(prefix)
        results = dict(self.evaluate_fn(step))
        results["global_step"] = step
        previous = self.best_value
        block = result_lines(results)
        if self.best_lines:
            block += [f"best = {previous}", SEPARATOR]
        value = results.get(self.metric_key)
        # (prefix None: weights that are no checkpoint of ours, e.g. --init_checkpoint)
        if prefix is not None and self._is_better(value):
            copied = copy_checkpoint(prefix, self.best_path)
            self.best_step, self.best_value, self.best_results = step, float(value), results
            logging.info("New best %s = %s at step %d; saved as %s", self.metric_key, value,
                         step, self.best_path)
            if not self.best_lines:  # after the first metric line, as the original (Q17)
                block[1:1] = [f"saved {source} to {target}" for source, target in copied]
        self._append(block)
        if prefix is None:
            return results
        self.last_step = max(self.last_step, step)
        self._write_state()
        if self.prune:
            self._prune()
        return results

    def evaluate_if_present(self, step: int, prefix: str) -> dict[str, float] | None:
        """`evaluate`, or None with a warning when the checkpoint was deleted before it could
        be read (a trainer running beside keeps only its newest checkpoints)."""
        try:
            return self.evaluate(step, prefix)
        except tf.errors.NotFoundError:
            if tf.io.gfile.exists(prefix + ".index"):
                raise
            logging.warning("%s was deleted before it could be evaluated (the trainer keeps "
                            "only its newest checkpoints); skipped", prefix)
            self.skip(step)
            return None

    def skip(self, step: int) -> None:
        """Records `step` as done without a result (its checkpoint vanished before it could
        be evaluated), so a restarted evaluator does not wait for it again."""
        self.last_step = max(self.last_step, step)
        self._write_state()

    def _append(self, lines: list[str]) -> None:
        results_path = os.path.join(self.output_dir, RESULTS_FILE)
        old = ""
        if tf.io.gfile.exists(results_path):
            with tf.io.gfile.GFile(results_path) as f:
                old = f.read()
        _write_atomic(results_path, old + "\n".join(lines) + "\n")

    def _write_state(self) -> None:
        if self.best_step is not None:  # (None only if every value so far was NaN)
            _write_atomic(os.path.join(self.output_dir, STATE_FILE),
                          f"{self.last_step}:{self.best_step}:{self.best_value}\n")

    def evaluate_pending(self) -> list[dict[str, float]]:
        """Evaluates every checkpoint not evaluated yet, in step order."""
        return [self.evaluate(step, prefix) for step, prefix in self.pending()]

    def _prune(self) -> None:
        """Deletes evaluated numbered checkpoints except the newest (kept for resuming)."""
        existing = numbered_checkpoints(self.output_dir)
        if not existing:
            return
        newest = existing[-1][0]
        for step, prefix in existing:
            if step <= self.last_step and step != newest:
                delete_checkpoint(prefix)


# ----- following a training run (side-car) -----

@dataclasses.dataclass(frozen=True)
class PollSettings:
    """How often to look for a new checkpoint, and how long to wait for one at most
    (--eval_poll_secs, --eval_timeout_secs)."""

    poll_secs: float = 60.0
    timeout_secs: float = 3600.0

    def __post_init__(self):
        for flag, value in (("eval_poll_secs", self.poll_secs),
                            ("eval_timeout_secs", self.timeout_secs)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"--{flag}={value}: expected a finite number > 0")


def _awaited(done: int) -> str:
    return "the first checkpoint" if done < 0 else f"a checkpoint after step {done}"


def follow_checkpoints(list_checkpoints: Callable[[], Sequence[tuple[int, str]]],
                       evaluate: Callable[[int, str], object], final_step: int,
                       last_evaluated: int, settings: PollSettings, directory: str,
                       final_step_flag: str = "--train_step", hint: str = "",
                       ready: Callable[[str], bool] = lambda prefix: True,
                       clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> list[int]:
    """Evaluates every checkpoint past `last_evaluated` until one at `final_step` or later
    has been evaluated; returns the steps evaluated, in order.

    Args:
      list_checkpoints: () → (step, prefix) of the checkpoints present now (any order).
      evaluate: (step, prefix) → anything; called once per new step.
      final_step: the training run's last step; the loop ends once it is evaluated.
      last_evaluated: the last step already evaluated (a restarted evaluator's state), -1
        if none.
      settings: poll interval and timeout (seconds).
      directory, final_step_flag: named in the log and in the timeout's message.
      hint: appended to the timeout's message (and logged while waiting for the first
        checkpoint).
      ready: prefix → whether that checkpoint is complete (e.g. checkpointing's
        `checkpoint_problem(prefix) is None`); an incomplete one is logged once and left.
      clock, sleep: time.monotonic and time.sleep, replaceable in tests.

    Raises:
      CheckpointWaitTimeout: no new checkpoint for `settings.timeout_secs`.
    """
    done, evaluated = last_evaluated, []
    if done >= final_step:
        logging.info("Every checkpoint of %s up to the final step %d (%s) was already "
                     "evaluated", directory, final_step, final_step_flag)
        return evaluated
    logging.info("Following the training run in %s until step %d (%s): looking for new "
                 "checkpoints every %gs, giving up after %gs without one", directory,
                 final_step, final_step_flag, settings.poll_secs, settings.timeout_secs)
    since = clock()
    waiting = False
    reported: set[str] = set()
    while done < final_step:
        pending = []
        for step, prefix in sorted(list_checkpoints()):
            if step <= done:
                continue
            if ready(prefix):
                pending.append((step, prefix))
            elif prefix not in reported:
                reported.add(prefix)
                logging.warning("%s is not complete yet (being written, or cut short): not "
                                "evaluated until it is, or passed over for a newer one", prefix)
        if pending:
            waiting = False
            for step, prefix in pending:
                logging.info("Evaluating checkpoint %s (step %d of %d)", prefix, step, final_step)
                evaluate(step, prefix)
                done = step
                evaluated.append(step)
            since = clock()
            continue
        waited = clock() - since
        if waited >= settings.timeout_secs:
            raise CheckpointWaitTimeout(
                f"no new checkpoint in {directory} for {settings.timeout_secs:g}s (--eval_timeout_"
                f"secs) while waiting for {_awaited(done)} (the run ends at step {final_step}, "
                f"{final_step_flag}); is the trainer running there, with the same "
                f"{final_step_flag}?{hint}")
        if not waiting:
            logging.info("Waiting for %s in %s (final step %d)%s", _awaited(done), directory,
                         final_step, hint if done < 0 else "")
            waiting = True
        sleep(min(settings.poll_secs, settings.timeout_secs - waited))
    logging.info("Reached the final step %d: %d checkpoint(s) evaluated", final_step,
                 len(evaluated))
    return evaluated


def follow_training(evaluator: CheckpointEvaluator, final_step: int, settings: PollSettings,
                    final_step_flag: str, hint: str = "",
                    results: list[dict[str, float]] | None = None) -> list[dict[str, float]]:
    """Side-car evaluation: each new checkpoint of `evaluator.output_dir` evaluated once, in
    step order, until `final_step` (`follow_checkpoints`), after the steps `evaluator` already
    did (best_trial.txt, so a restart resumes); a checkpoint deleted before it could be read is
    skipped. Returns `results` (a new list by default) with each evaluation's metrics appended
    as it is done."""
    results = [] if results is None else results
    evaluator.log_resume()

    def evaluate(step: int, prefix: str) -> None:
        found = evaluator.evaluate_if_present(step, prefix)
        if found is not None:
            results.append(found)

    follow_checkpoints(lambda: numbered_checkpoints(evaluator.output_dir), evaluate, final_step,
                       evaluator.last_step, settings, evaluator.output_dir,
                       final_step_flag=final_step_flag, hint=hint,
                       ready=lambda prefix: checkpoint_problem(prefix) is None)
    return results
