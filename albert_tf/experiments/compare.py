"""One metric of several runs side by side, from their `eval_results.txt` files
(`python -m albert_tf.compare_runs` is its command line).

Each file holds `key = value` lines (one block per evaluated checkpoint, as the original
writes them); the last value of the metric in the file is reported.
"""

from __future__ import annotations

import os
from typing import Sequence

from albert_tf.runtime import paths


def last_value(results_file: str, metric: str) -> float:
    """The last `metric = value` line of an eval_results.txt."""
    value = None
    with paths.open_file(results_file) as f:
        for line in f:
            key, sep, text = line.partition(" = ")
            if sep and key.strip() == metric:
                value = float(text)
    if value is None:
        raise ValueError(f"{results_file}: no line '{metric} = ...'")
    return value


def compare_runs(runs: Sequence[tuple[str, str]], metric: str) -> str:
    """A two-column table: each (label, output_dir)'s last `metric` in its eval_results.txt."""
    rows = [(label, last_value(os.path.join(directory, "eval_results.txt"), metric))
            for label, directory in runs]
    width = max(len(label) for label, _ in rows)
    return "\n".join([f"{'run':<{width}}  {metric}"]
                     + [f"{label:<{width}}  {value:.4f}" for label, value in rows])
