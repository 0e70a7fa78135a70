"""Prediction files: the original's two (faithfulness §8.6) and the GLUE server's one per task.

* `test_results.tsv` — one line per example, tab-separated class probabilities (STS-B: the
  single output).
* `submit_results.tsv` — `index<TAB>prediction`, then `guid<TAB>label string` (STS-B: the
  float); the original leaves renaming it to the user.
* `<Name>.tsv` — the same content under the file name gluebenchmark.com expects in the
  submission zip: CoLA, SST-2, MRPC, STS-B, QQP, MNLI-m, MNLI-mm, QNLI, RTE, WNLI, AX.

`read_submission` parses a file the way the server does and rejects anything it would.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.glue.metrics import predictions_from_logits
from albert_tf.glue.examples import TASKS, GlueTask

HEADER = ("index", "prediction")
SUBMISSION_FILES = tuple(f"{task.submission_name}.tsv" for task in TASKS.values())


def _write_atomic(path: str, text: str) -> None:
    with atomic_file(path, newline="\n") as f:
        f.write(text)


def prediction_strings(task: GlueTask, predictions: np.ndarray) -> list[str]:
    """Label strings of class ids, or formatted STS-B scores."""
    if task.is_regression:
        return [repr(float(p)) for p in predictions]
    return [task.labels[int(p)] for p in predictions]


def write_submission(path: str, task: GlueTask, guids: Sequence[str],
                     predictions: np.ndarray) -> str:
    """`index<TAB>prediction` then one row per example."""
    if len(guids) != len(predictions):
        raise ValueError(f"{len(guids)} guids but {len(predictions)} predictions")
    rows = ["\t".join(HEADER)]
    labels = prediction_strings(task, predictions)
    rows += [f"{guid}\t{label}" for guid, label in zip(guids, labels)]
    _write_atomic(path, "\n".join(rows) + "\n")
    return path


def write_test_results(path: str, task: GlueTask, logits: np.ndarray) -> str:
    """One line per example: softmax probabilities, or the STS-B output."""
    logits = np.asarray(logits, np.float64)
    if task.is_regression:
        values = logits.reshape(-1, 1)
    else:
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        values = shifted / shifted.sum(axis=-1, keepdims=True)
    _write_atomic(path, "".join("\t".join(repr(float(v)) for v in row) + "\n" for row in values))
    return path


def write_prediction_files(output_dir: str, task: GlueTask, guids: Sequence[str],
                           logits: np.ndarray) -> list[str]:
    """test_results.tsv, submit_results.tsv and `<Name>.tsv` in `output_dir`."""
    predictions = predictions_from_logits(task, logits)
    return [write_test_results(os.path.join(output_dir, "test_results.tsv"), task, logits)] + [
        write_submission(os.path.join(output_dir, name), task, guids, predictions)
        for name in ("submit_results.tsv", f"{task.submission_name}.tsv")]


def read_submission(path: str, task: GlueTask) -> list[tuple[str, str | float]]:
    """(index, prediction) rows of a submission file, validated as the GLUE server would:
    the exact header, two fields per row, unique indices, known labels / numeric scores."""
    lines = paths.read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise ValueError(f"{path}: line 1: expected header 'index\\tprediction'")
    rows: list[tuple[str, str | float]] = []
    seen = set()
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}: line {number}: expected 2 fields, found {len(fields)}")
        index, prediction = fields
        if index in seen:
            raise ValueError(f"{path}: line {number}: duplicate index {index!r}")
        seen.add(index)
        if task.is_regression:
            try:
                value: str | float = float(prediction)
            except ValueError:
                raise ValueError(f"{path}: line {number}: {prediction!r} is not a number") from None
        else:
            if prediction not in task.labels:
                raise ValueError(f"{path}: line {number}: unknown label {prediction!r}")
            value = prediction
        rows.append((index, value))
    return rows
