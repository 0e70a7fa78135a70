"""GLUE fine-tuning: the original's `python run_classifier.py …`, with its flags.

A shim: the flags and the code are in `albert_tf/run_classifier.py`, which an installed
package runs as `albert-run-classifier` and `python -m albert_tf.run_classifier`.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from albert_tf.run_classifier import FLAGS, console_main, main, run

__all__ = ["FLAGS", "console_main", "main", "run"]

if __name__ == "__main__":
    console_main()
