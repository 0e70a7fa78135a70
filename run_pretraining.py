"""ALBERT pretraining (MLM + SOP): the original's `python run_pretraining.py …`, with its flags.

A shim: the flags and the code are in `albert_tf/run_pretraining.py`, which an installed
package runs as `albert-run-pretraining` and `python -m albert_tf.run_pretraining`.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from albert_tf.run_pretraining import FLAGS, console_main, main, run

__all__ = ["FLAGS", "console_main", "main", "run"]

if __name__ == "__main__":
    console_main()
