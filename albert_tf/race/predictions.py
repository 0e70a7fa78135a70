"""The predictions file: one row per question — article id, question index, predicted letter.

`predictions.tsv` (tab-separated, header `id  question_index  prediction`); the question
index is 0-based, as in the article's `questions` list. Written atomically.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.race.examples import ANSWER_LETTERS, RaceExample

PREDICTIONS_FILE = "predictions.tsv"
HEADER = ("id", "question_index", "prediction")


def predicted_letters(logits: np.ndarray) -> list[str]:
    """A–D of the highest-scoring option of each row."""
    return [ANSWER_LETTERS[int(i)] for i in np.argmax(np.asarray(logits), axis=-1)]


def write_predictions(path: str, examples: Sequence[RaceExample], logits: np.ndarray) -> str:
    """Writes the file (under a temporary name, then renamed); returns its path."""
    if len(examples) != len(logits):
        raise ValueError(f"{len(logits)} predictions for {len(examples)} examples")
    rows = ["\t".join(HEADER)]
    rows += [f"{e.example_id}\t{e.question_index}\t{letter}"
             for e, letter in zip(examples, predicted_letters(logits))]
    with atomic_file(path, newline="\n") as f:
        f.write("\n".join(rows) + "\n")
    return path


def read_predictions(path: str) -> list[tuple[str, int, str]]:
    """(id, question index, letter) rows of a predictions file."""
    lines = paths.read_text(path).splitlines()
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise ValueError(f"{path}: line 1: expected header {' '.join(HEADER)}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 3 or fields[2] not in ANSWER_LETTERS:
            raise ValueError(f"{path}: line {number}: expected id, question index, letter A–D")
        rows.append((fields[0], int(fields[1]), fields[2]))
    return rows
