"""Trains the tiny pretrainer in this process and sends itself SIGINT after step 3 (the
preemption test's in-process Ctrl-C), then prints what Trainer.train raised as JSON.

A child process of its own: Ctrl-C is the process's, so a test worker that shares its signal
handlers with other tests (pytest-xdist) is not the one interrupted.

    python tests/training/scripts/sigint_in_process.py OUTPUT_DIR
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


def main(output_dir: str) -> None:
    before = signal.getsignal(signal.SIGINT)
    trainer = make_trainer(output_dir, steps=10, iterations_per_loop=1, log_steps=1,
                           callbacks=[SendAt(3, signal.SIGINT)])
    try:
        trainer.train(synthetic.dataset_fn(8))
    except TrainingPreempted as e:
        print(json.dumps({"exit_status": e.exit_status, "step": e.step,
                          "checkpoint": e.checkpoint,
                          "handler_restored": signal.getsignal(signal.SIGINT) is before}))
        return
    print(json.dumps({"error": "training was not preempted"}))


if __name__ == "__main__":
    main(sys.argv[1])
