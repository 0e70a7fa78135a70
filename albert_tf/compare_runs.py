"""Prints one metric of several runs side by side, from their `eval_results.txt` files.

    python -m albert_tf.compare_runs --metric=eval_accuracy \\
        --runs="pretrained init=out/mrpc_pretrained,random init=out/mrpc_random"

Each file holds `key = value` lines (one block per evaluated checkpoint, as the original
writes them); the last value of the metric in the file is reported.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import app, flags

from albert_tf import cli
from albert_tf.experiments.compare import compare_runs

FLAGS = flags.FLAGS
flags.DEFINE_list("runs", None, "label=output_dir pairs.")
flags.DEFINE_string("metric", "eval_accuracy", "Key to report.")
flags.mark_flag_as_required("runs")


def run() -> None:
    """The flags → `experiments.compare.compare_runs`, printed."""
    runs = []
    for item in FLAGS.runs:
        label, sep, directory = item.partition("=")
        if not sep:
            raise app.UsageError(f"--runs entry {item!r} is not label=output_dir")
        runs.append((label, directory))
    print(compare_runs(runs, FLAGS.metric))


def console_main() -> None:
    """`albert-compare-runs` (console script) and `python -m albert_tf.compare_runs`. A missing
    results file or metric: one line, exit 1."""
    cli.start("compare_runs", run, __name__)


if __name__ == "__main__":
    console_main()
