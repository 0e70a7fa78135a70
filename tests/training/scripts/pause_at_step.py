"""Runs a training script with a pause after a given step, for the fault tests.

    TEST_PAUSE_AT_STEP=6 python -m tests.training.scripts.pause_at_step run_classifier.py <flags>

After logging step TEST_PAUSE_AT_STEP (use --log_steps=1), the run prints
"PAUSED AT STEP <n>" and waits (at most 120 s) until its SIGTERM/SIGINT watch has recorded a
signal, so the test's signal arrives at a known step, which need not be a checkpoint step.
With TEST_PAUSE_AT_CHECKPOINT=8 instead (and TEST_PAUSE_AT_STEP=0), the run prints
"PAUSED AT CHECKPOINT 8" once it wrote that checkpoint and sleeps, to be SIGKILLed there; a
resumed run never writes that step again, so the same command then runs to the end.
The hook is added to every Trainer (the scripts take no callbacks).
"""

import os
import runpy
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf.runtime import execution_rules

# The script is not the program here, so its start-up would not choose oneDNN, and TensorFlow
# is imported below: choose it as the script does when run itself, or the paused run would
# take another execution path than the uninterrupted run it is compared with.
execution_rules.choose_onednn()

from albert_tf.training import loop  # noqa: E402

PAUSE_AT = int(os.environ["TEST_PAUSE_AT_STEP"])
PAUSE_AT_CHECKPOINT = int(os.environ.get("TEST_PAUSE_AT_CHECKPOINT", "0"))


class PauseHook(loop.Callback):
    def on_log(self, step, logs):
        if step != PAUSE_AT:
            return
        print(f"PAUSED AT STEP {step}", flush=True)
        watch = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
        deadline = time.monotonic() + 120
        while watch is not None and not watch.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)

    def on_checkpoint(self, step, path):
        if step == PAUSE_AT_CHECKPOINT:
            print(f"PAUSED AT CHECKPOINT {step}", flush=True)
            time.sleep(600)


_init = loop.Trainer.__init__


def _init_with_pause(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.callbacks.append(PauseHook())


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    loop.Trainer.__init__ = _init_with_pause
    script, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
