"""RACE fine-tuning: the original's `python run_race.py …`, with its flags.

A shim: the flags and the code are in `albert_tf/run_race.py`, which an installed
package runs as `albert-run-race` and `python -m albert_tf.run_race`.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from albert_tf.run_race import FLAGS, console_main, main, run

__all__ = ["FLAGS", "console_main", "main", "run"]

if __name__ == "__main__":
    console_main()
