"""Signals a process sends itself, for the preemption tests, in a process (and session) of
their own: a pytest-xdist worker that received them ended (CI hung on it), so no test signals
its own process.

    python tests/training/scripts/sigint_in_process.py OUTPUT_DIR

SignalWatch + LocalGuard first, then a Trainer with Ctrl-C at step 3 writing to OUTPUT_DIR
(one process for both: each restores the handlers it changed). Prints one JSON line
{"watch": {...}, "sigint": {...}} of what happened.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from albert_tf.training import Callback
from albert_tf.training.errors import TrainingPreempted
from tests.training import synthetic
from tests.training.test_loop import make_trainer


class SendAt(Callback):
    """Sends `signum` to this process after step `step` is logged."""

    def __init__(self, step: int, signum: int):
        self.step, self.signum = step, signum

    def on_log(self, step, logs):
        if step == self.step:
            os.kill(os.getpid(), self.signum)


def watch_and_guard() -> dict:
    """SIGTERM recorded (a second ignored), the guard saves then raises, a SIGINT after it
    raises KeyboardInterrupt, the previous handlers come back."""
    from albert_tf.training.preemption import LocalGuard, SignalWatch, exit_status

    report: dict = {}
    saved = []
    with SignalWatch() as watch:
        report["active"] = watch.active
        guard = LocalGuard(watch, lambda: saved.append(1) or (7, "/x/model.ckpt-7"))
        report["runs_before"] = guard.run(lambda a: a + 1, 1) == 2 and not saved
        os.kill(os.getpid(), signal.SIGTERM)
        report["received"] = watch.received
        os.kill(os.getpid(), signal.SIGTERM)  # a second SIGTERM is ignored while saving
        try:
            guard.run(lambda: None)
        except TrainingPreempted as e:
            report["preempted"] = str(e)
        report["saved"] = len(saved)
        try:
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C stops at once
            report["interrupted"] = False
        except KeyboardInterrupt:
            report["interrupted"] = True
    report["statuses"] = [exit_status(signal.SIGTERM), exit_status(signal.SIGINT),
                          exit_status(None)]
    report["sigterm_restored"] = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    return report


def sigint_during_training(output_dir: str) -> dict:
    before = signal.getsignal(signal.SIGINT)
    trainer = make_trainer(output_dir, steps=10, iterations_per_loop=1, log_steps=1,
                           callbacks=[SendAt(3, signal.SIGINT)])
    try:
        trainer.train(synthetic.dataset_fn(8))
    except TrainingPreempted as e:
        return {"exit_status": e.exit_status, "step": e.step, "checkpoint": e.checkpoint,
                "handler_restored": signal.getsignal(signal.SIGINT) is before}
    return {"error": "training was not preempted"}


if __name__ == "__main__":
    watch = watch_and_guard()
    print(json.dumps({"watch": watch, "sigint": sigint_during_training(sys.argv[1])}))
