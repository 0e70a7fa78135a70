"""GLUE examples: the task table (folder, files, columns, labels, submission name; faithfulness
§8.2) and reading each split's TSV into `InputExample`s.

One declarative table (`TASKS`) replaces the original's processor classes; `GlueProcessor`
reads any task from it with the original's method names. Task names are the original's
(`cola`, `mnli`, `mismnli`, `mrpc`, `rte`, `sst-2`, `sts-b`, `qqp`, `qnli`, `wnli`), plus
`ax`, the diagnostic set the original defines but never registers (Q19, fixed).

Example:
    >>> processor = GlueProcessor(get_task("MRPC"), use_spm=True, do_lower_case=True)
    >>> examples = processor.get_train_examples("glue_data")
    >>> processor.get_labels()
    ['0', '1']
"""

from __future__ import annotations

import dataclasses
import os
from typing import Mapping

from absl import logging

from albert_tf.glue.tsv import GlueDataError, TsvRow, read_tsv
from albert_tf.tokenization import convert_to_unicode, preprocess_text

SPLITS = ("train", "dev", "test")
LAST = -1  # "the last column" (MNLI, RTE, QNLI, WNLI, STS-B labels)
MNLI_LABELS = ("contradiction", "entailment", "neutral")


@dataclasses.dataclass(frozen=True)
class SplitLayout:
    """Where one split's fields are.

    Attributes:
      filename: file inside the task folder.
      header: the first row is a header (skipped; it also fixes the column count).
      text_a, text_b: text columns (text_b None for single-sentence tasks).
      label: label column (LAST for the last one), None for unlabelled test files.
      guid: column holding the example id, or None for the original's "<split>-<line index>".
      num_columns: expected columns of a file without a header.
    """

    filename: str
    header: bool
    text_a: int
    text_b: int | None
    label: int | None
    guid: int | None
    num_columns: int | None = None


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE task: `labels` None means regression (STS-B, one output)."""

    name: str
    folder: str
    labels: tuple[str, ...] | None
    splits: Mapping[str, SplitLayout]
    submission_name: str
    metric_key: str = "eval_accuracy"
    # The original skips QQP train/dev lines it cannot index (a try/except around them).
    skip_malformed: bool = False

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def path(self, data_dir: str, split: str) -> str:
        return os.path.join(data_dir, self.folder, self.layout(split).filename)

    def layout(self, split: str) -> SplitLayout:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        if split not in self.splits:
            raise GlueDataError(f"task {self.name} has no {split} split "
                                f"(it has: {', '.join(self.splits)})")
        return self.splits[split]


@dataclasses.dataclass
class InputExample:
    """One example: `label` is a label string, a float (STS-B) or the dummy test label."""

    guid: str
    text_a: str
    text_b: str | None
    label: str | float


def _pair(train: str, dev: str, test: str, a: int, b: int | None, label: int,
          test_a: int | None = None, test_b: int | None = None, guid: int | None = 0,
          test_guid: int = 0) -> dict[str, SplitLayout]:
    """Layouts of a task whose train and dev files share columns (all but CoLA's test)."""
    test_a = a if test_a is None else test_a
    test_b = b if test_b is None else test_b
    return {
        "train": SplitLayout(train, True, a, b, label, guid),
        "dev": SplitLayout(dev, True, a, b, label, guid),
        "test": SplitLayout(test, True, test_a, test_b, None, test_guid),
    }


_MNLI = dict(folder="MNLI", labels=MNLI_LABELS)
TASKS: dict[str, GlueTask] = {task.name: task for task in (
    GlueTask("cola", "CoLA", ("0", "1"), {
        "train": SplitLayout("train.tsv", False, 3, None, 1, None, num_columns=4),
        "dev": SplitLayout("dev.tsv", False, 3, None, 1, None, num_columns=4),
        "test": SplitLayout("test.tsv", True, 1, None, None, 0),
    }, "CoLA", metric_key="matthew_corr"),
    GlueTask("sst-2", "SST-2", ("0", "1"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 0, None, 1, test_a=1, guid=None), "SST-2"),
    GlueTask("mrpc", "MRPC", ("0", "1"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 3, 4, 0, guid=None), "MRPC"),
    GlueTask("sts-b", "STS-B", None,
             _pair("train.tsv", "dev.tsv", "test.tsv", 7, 8, LAST), "STS-B", metric_key="pearson"),
    GlueTask("qqp", "QQP", ("0", "1"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 3, 4, 5, test_a=1, test_b=2), "QQP",
             skip_malformed=True),
    GlueTask(name="mnli", splits=_pair("train.tsv", "dev_matched.tsv", "test_matched.tsv",
                                       8, 9, LAST), submission_name="MNLI-m", **_MNLI),
    GlueTask(name="mismnli", splits=_pair("train.tsv", "dev_mismatched.tsv",
                                          "test_mismatched.tsv", 8, 9, LAST),
             submission_name="MNLI-mm", **_MNLI),
    GlueTask("qnli", "QNLI", ("entailment", "not_entailment"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 1, 2, LAST), "QNLI"),
    GlueTask("rte", "RTE", ("entailment", "not_entailment"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 1, 2, LAST), "RTE"),
    GlueTask("wnli", "WNLI", ("0", "1"),
             _pair("train.tsv", "dev.tsv", "test.tsv", 1, 2, LAST), "WNLI"),
    # The diagnostic set: test only, MNLI labels; predicted with an MNLI model (Q19).
    GlueTask("ax", "diagnostic", MNLI_LABELS,
             {"test": SplitLayout("diagnostic.tsv", True, 1, 2, None, 0)}, "AX"),
)}
TASK_NAMES = tuple(TASKS)


def get_task(name: str) -> GlueTask:
    """The task called `name` (case-insensitive, as the original lower-cases task_name)."""
    task = TASKS.get(name.lower())
    if task is None:
        raise ValueError(f"unknown GLUE task {name!r}; expected one of {', '.join(TASK_NAMES)}")
    return task


class GlueProcessor:
    """Reads a task's splits into InputExamples, with the original's text handling.

    In SentencePiece mode every text field and string label goes through
    `preprocess_text(lower=do_lower_case)`; in WordPiece mode text is only decoded (the
    WordPiece tokenizer lower-cases itself). Guids taken from a column are left as they are.

    Every row is checked: a wrong column count, an unknown label, a non-numeric STS-B score,
    a missing file or an empty split raise GlueDataError naming the file and line (QQP's
    malformed train/dev lines are skipped with a warning instead, as the original skips them).
    """

    def __init__(self, task: GlueTask, use_spm: bool = True, do_lower_case: bool = True):
        self.task = task
        self.use_spm = use_spm
        self.do_lower_case = do_lower_case

    # The original's processor API.
    def get_train_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, "train")

    def get_dev_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, "dev")

    def get_test_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, "test")

    def get_labels(self) -> list[str | None]:
        """Label strings in id order; `[None]` for STS-B (one regression output)."""
        return [None] if self.task.labels is None else list(self.task.labels)

    def process_text(self, text: str) -> str:
        if self.use_spm:
            return preprocess_text(text, lower=self.do_lower_case)
        return convert_to_unicode(text)

    def get_examples(self, data_dir: str, split: str) -> list[InputExample]:
        """Examples of `split` ("train", "dev" or "test") read from the official layout."""
        layout = self.task.layout(split)
        path = self.task.path(data_dir, split)
        rows = read_tsv(path)
        if layout.header:
            if not rows:
                raise GlueDataError(f"{path}: empty file (expected a header line)")
            header, rows = rows[0], rows[1:]
            num_columns = len(header.fields)
        else:
            num_columns = layout.num_columns
        needed = max(c for c in (layout.text_a, layout.text_b, layout.label, layout.guid)
                     if c is not None)
        if num_columns is not None and num_columns <= needed:
            raise GlueDataError(f"{path}: line 1: header has {num_columns} columns; task "
                                f"{self.task.name} needs at least {needed + 1}")
        examples, skipped = [], 0
        for row in rows:
            if num_columns is not None and len(row.fields) != num_columns:
                if self.task.skip_malformed and split != "test":
                    skipped += 1
                    logging.warning("%s: line %d: %d columns instead of %d; skipped (as the "
                                    "original skips malformed %s lines)", path, row.line,
                                    len(row.fields), num_columns, self.task.name)
                    continue
                raise GlueDataError(f"{path}: line {row.line}: expected {num_columns} "
                                    f"tab-separated columns, found {len(row.fields)}")
            examples.append(self._example(row, layout, split, path))
        if not examples:
            raise GlueDataError(f"{path}: no examples (the {split} split is empty)")
        if skipped:
            logging.warning("%s: skipped %d malformed line(s)", path, skipped)
        return examples

    def _example(self, row: TsvRow, layout: SplitLayout, split: str, path: str) -> InputExample:
        fields = row.fields
        guid = f"{split}-{row.line - 1}" if layout.guid is None else fields[layout.guid]
        text_a = self.process_text(fields[layout.text_a])
        text_b = None if layout.text_b is None else self.process_text(fields[layout.text_b])
        if layout.label is None:  # unlabelled test data: a dummy label, as the original
            label: str | float = 0.0 if self.task.is_regression else self.task.labels[0]
        elif self.task.is_regression:
            raw = fields[layout.label]
            try:
                label = float(raw)
            except ValueError:
                raise GlueDataError(f"{path}: line {row.line}: score {raw!r} is not a "
                                    "number") from None
        else:
            raw = fields[layout.label]
            label = self.process_text(raw) if self.use_spm else raw.strip()
            if label not in self.task.labels:
                raise GlueDataError(f"{path}: line {row.line}: unknown label {raw!r} (task "
                                    f"{self.task.name} expects one of "
                                    f"{', '.join(self.task.labels)})")
        return InputExample(guid, text_a, text_b, label)
