"""Prints one metric of several runs side by side, from their `eval_results.txt` files.

    python -m albert_tf.compare_runs --metric=eval_accuracy \\
        --runs="pretrained init=out/mrpc_pretrained,random init=out/mrpc_random"

Each file holds `key = value` lines (one block per evaluated checkpoint, as the original
writes them); the last value of the metric in the file is reported.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS
flags.DEFINE_list("runs", None, "label=output_dir pairs.")
flags.DEFINE_string("metric", "eval_accuracy", "Key to report.")
flags.mark_flag_as_required("runs")


def last_value(results_file: str, metric: str) -> float:
    """The last `metric = value` line of an eval_results.txt."""
    value = None
    with open(results_file, encoding="utf-8") as f:
        for line in f:
            key, sep, text = line.partition(" = ")
            if sep and key.strip() == metric:
                value = float(text)
    if value is None:
        raise ValueError(f"{results_file}: no line '{metric} = ...'")
    return value


def main(argv: list[str]) -> None:
    del argv
    rows = []
    for item in FLAGS.runs:
        label, sep, directory = item.partition("=")
        if not sep:
            raise app.UsageError(f"--runs entry {item!r} is not label=output_dir")
        rows.append((label, last_value(os.path.join(directory, "eval_results.txt"), FLAGS.metric)))
    width = max(len(label) for label, _ in rows)
    print(f"{'run':<{width}}  {FLAGS.metric}")
    for label, value in rows:
        print(f"{label:<{width}}  {value:.4f}")


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("compare_runs"))
