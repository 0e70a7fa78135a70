"""SQuAD v1.1 / v2.0 fine-tuning: the original's `python run_squad.py …`, with its flags.

A shim: the flags and the code are in `albert_tf/run_squad.py`, which an installed
package runs as `albert-run-squad` and `python -m albert_tf.run_squad`.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from albert_tf.run_squad import FLAGS, console_main, main, run

__all__ = ["FLAGS", "console_main", "main", "run"]

if __name__ == "__main__":
    console_main()
