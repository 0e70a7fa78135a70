"""Side-car evaluation: follow a training run's checkpoints to its final step
(docs/faithfulness.md §6.4, §8.6).

The original's `--do_eval` without `--do_train` runs beside the trainer (a TPU trains, a
CPU job evaluates): it polls `output_dir`, evaluates each new checkpoint and stops once
the evaluated step reaches the run's last step. `follow_checkpoints` is that loop, free of
TensorFlow and of any task: `list_checkpoints()` gives the (step, prefix) pairs present,
each step past the last one evaluated goes to `evaluate(step, prefix)` exactly once, in
step order, and the loop sleeps `poll_secs` between looks. Unlike the original, which waits
forever, it gives up with `CheckpointWaitTimeout` after `timeout_secs` without a new
checkpoint. A checkpoint that is not complete yet (`ready(prefix)` False: still being
written, or cut short by a killed trainer) is not evaluated: the loop waits for it, or passes
over it once a newer complete one is there (docs/faults.md). Used by run_pretraining,
run_classifier and run_race.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

from absl import logging


class CheckpointWaitTimeout(TimeoutError):
    """No new checkpoint appeared within --eval_timeout_secs (one line, exit status 1)."""


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
