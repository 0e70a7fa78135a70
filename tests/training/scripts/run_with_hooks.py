"""run_pretraining.py with test hooks, for the multi-worker and SIGKILL-resume tests.

    python -m tests.training.scripts.run_with_hooks <run_pretraining flags> \
        [--test_pause_at_checkpoint=STEP] [--test_dump_weights=FILE.npz]

--test_pause_at_checkpoint prints "PAUSED AT CHECKPOINT <step>" after writing that
checkpoint and sleeps (the test SIGKILLs the process there); a resumed run never writes that
step again, so the same command then runs to the end. --test_dump_weights saves the final
model weights of this worker.
"""

import functools
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

import run_pretraining
from albert_tf.training.loop import Callback

flags.DEFINE_integer("test_pause_at_checkpoint", None, "Sleep after writing this checkpoint.")
flags.DEFINE_string("test_dump_weights", None, "Write the final weights here (.npz).")
FLAGS = flags.FLAGS


class Hooks(Callback):
    def on_checkpoint(self, step, path):
        if step == FLAGS.test_pause_at_checkpoint:
            print(f"PAUSED AT CHECKPOINT {step}", flush=True)
            time.sleep(600)
        if FLAGS.test_dump_weights and step == FLAGS.num_train_steps:
            import numpy as np

            weights = {v.path: v.numpy() for v in self.trainer.model.weights}
            np.savez(FLAGS.test_dump_weights, **weights)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    app.run(functools.partial(run_pretraining.main, callbacks=[Hooks()]))
