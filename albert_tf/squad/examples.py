"""Reading SQuAD v1.1 / v2.0 JSON into examples, with clear errors and counted skips.

Faithfulness §9.2: `data[*].paragraphs[*]` give the raw `context` and each qa's `id`, `question`;
for training, answerable questions need exactly one answer (`text`, `answer_start`) and
v2's `is_impossible` ones get start −1 and empty text. Training examples are shuffled with
`random.Random(12345)` (see `shuffle_training_examples`).

What the original does not do and we add (issue 6): a malformed file or a broken structure
is one `SquadDataError` line (file, JSON path, what was expected); questions that cannot
be used (empty context, an `answer_start` that does not point at the answer text, a
training question without exactly one answer) are skipped and counted in a `SkipReport`;
a v2.0 file read without `--version_2_with_negative` is an error rather than a crash later.
A training answer whose span `[answer_start, answer_start + len(text))` is not inside its
context is corrupt data (the original crashes on it, faithfulness §9.3 step 6): an error
naming the file, the question id and the offsets, not a skip.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import random
from typing import Any

from albert_tf.runtime import paths

TRAINING_SHUFFLE_SEED = 12345  # the original shuffles training examples with this seed


class SquadDataError(ValueError):
    """The input file cannot be used; the message is one line naming file and place."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """One gold answer: its text and character offset in the raw context."""

    text: str
    answer_start: int


@dataclasses.dataclass
class SquadExample:
    """One question on one paragraph.

    `answers` holds every gold answer of the file (dev files have several); training uses
    the first. `paragraph_id` identifies the context so its tokenization is shared.
    """

    qas_id: str
    question_text: str
    context_text: str
    answers: list[Answer]
    is_impossible: bool = False
    paragraph_id: int = 0

    @property
    def answer_text(self) -> str:
        """Text of the first gold answer; "" for an unanswerable question."""
        return "" if self.is_impossible or not self.answers else self.answers[0].text

    @property
    def answer_start(self) -> int:
        """Character offset of the first gold answer; −1 for an unanswerable question."""
        return -1 if self.is_impossible or not self.answers else self.answers[0].answer_start


@dataclasses.dataclass
class SkipReport:
    """Questions left out, counted by reason, so a run can list them at the end."""

    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    ids: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def add(self, reason: str, qas_id: str) -> None:
        self.counts[reason] += 1
        self.ids.setdefault(reason, []).append(qas_id)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary_lines(self, max_ids: int = 5) -> list[str]:
        """One line per reason: count, reason and the first few question ids."""
        lines = []
        for reason, count in sorted(self.counts.items()):
            shown = self.ids[reason][:max_ids]
            more = f", … (+{count - len(shown)})" if count > len(shown) else ""
            lines.append(f"skipped {count} question(s): {reason} (ids: {', '.join(shown)}{more})")
        return lines


def _read_text(path: str) -> str:
    if not paths.isfile(path):  # cloud paths go through gfile, as the original
        raise SquadDataError(f"{path}: file not found")
    try:
        return paths.read_text(path, "utf-8-sig")
    except UnicodeDecodeError as e:
        raise SquadDataError(f"{path}: byte {e.start}: not valid UTF-8") from None


def read_squad_file(path: str) -> dict[str, Any]:
    """The parsed JSON of a SQuAD file; checks that it has a `data` list.

    Raises:
      SquadDataError: file missing, invalid JSON (with line and column) or no `data` list.
    """
    path = os.fspath(path)
    text = _read_text(path)
    try:
        dataset = json.loads(text)
    except json.JSONDecodeError as e:
        raise SquadDataError(
            f"{path}: line {e.lineno} column {e.colno}: not valid JSON ({e.msg})") from None
    if not isinstance(dataset, dict) or not isinstance(dataset.get("data"), list):
        raise SquadDataError(f'{path}: expected a JSON object with a "data" list (SQuAD format)')
    return dataset


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """obj[key], checked to be of `kind`; a SquadDataError names the JSON path otherwise."""
    if not isinstance(obj, dict):
        raise SquadDataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        raise SquadDataError(f'{where}: missing "{key}"')
    value = obj[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise SquadDataError(f'{where}: "{key}" must be {_kind_name(kind)}, got a boolean')
    if not isinstance(value, kind):
        raise SquadDataError(f'{where}: "{key}" must be {_kind_name(kind)}, '
                             f"got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", list: "a list", bool: "a boolean",
             dict: "an object"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def squad_v2_evidence(dataset: dict[str, Any]) -> str | None:
    """Why `dataset` is a SQuAD 2.0 file (a version tag, `is_impossible: true` or
    `plausible_answers`), or None when nothing says so."""
    if str(dataset.get("version", "")).startswith("v2"):
        return f'"version": "{dataset["version"]}"'
    for article in dataset["data"]:
        for paragraph in (article.get("paragraphs") or []) if isinstance(article, dict) else []:
            for qa in (paragraph.get("qas") or []) if isinstance(paragraph, dict) else []:
                if isinstance(qa, dict) and (qa.get("is_impossible") is True
                                             or "plausible_answers" in qa):
                    return f'question {qa.get("id")!r} is marked is_impossible'
    return None


def read_squad_examples(path: str, is_training: bool, version_2_with_negative: bool = False,
                        skips: SkipReport | None = None
                        ) -> tuple[list[SquadExample], SkipReport]:
    """Examples of a SQuAD v1.1 or v2.0 file, in file order.

    Args:
      path: the JSON file.
      is_training: check the answer of every question (exactly one, `answer_start`
        pointing at its text); prediction files keep all their gold answers unchecked
        (only their text is used, by the evaluation).
      version_2_with_negative: the file may hold unanswerable questions.
      skips: a report to add to (a new one by default).
    Returns:
      (examples, skip report).
    Raises:
      SquadDataError: unreadable file, broken structure, or a v2.0 file without
        `version_2_with_negative`.
    """
    path = os.fspath(path)
    skips = skips if skips is not None else SkipReport()
    dataset = read_squad_file(path)
    if not version_2_with_negative:
        evidence = squad_v2_evidence(dataset)
        if evidence:
            raise SquadDataError(f"{path}: this is a SQuAD 2.0 file ({evidence}); "
                                 f"pass --version_2_with_negative to use it")
    examples: list[SquadExample] = []
    seen_ids: set[str] = set()
    paragraph_id = 0
    for a, article in enumerate(dataset["data"]):
        where_article = f"{path}: data[{a}]"
        for p, paragraph in enumerate(_field(article, "paragraphs", list, where_article)):
            where_paragraph = f"{where_article}.paragraphs[{p}]"
            context = _field(paragraph, "context", str, where_paragraph)
            qas = _field(paragraph, "qas", list, where_paragraph)
            paragraph_id += 1
            for q, qa in enumerate(qas):
                where = f"{where_paragraph}.qas[{q}]"
                example = _read_qa(qa, context, paragraph_id, where, is_training,
                                   version_2_with_negative, skips)
                if example is None:
                    continue
                if example.qas_id in seen_ids:
                    skips.add("duplicate question id", example.qas_id)
                    continue
                seen_ids.add(example.qas_id)
                examples.append(example)
    return examples, skips


def _read_qa(qa: Any, context: str, paragraph_id: int, where: str, is_training: bool,
             version_2_with_negative: bool, skips: SkipReport) -> SquadExample | None:
    qas_id = str(_field(qa, "id", (str, int), where))
    question = _field(qa, "question", str, where)
    is_impossible = False
    if version_2_with_negative and "is_impossible" in qa:
        is_impossible = _field(qa, "is_impossible", bool, where)
    raw_answers = qa.get("answers", [])
    if not isinstance(raw_answers, list):
        raise SquadDataError(f'{where}: "answers" must be a list, got {type(raw_answers).__name__}')
    answers = []
    for i, answer in enumerate(raw_answers):
        text = _field(answer, "text", str, f"{where}.answers[{i}]")
        start = _field(answer, "answer_start", int, f"{where}.answers[{i}]")
        answers.append(Answer(text, start))
    if not context.strip():
        skips.add("empty context", qas_id)
        return None
    if not question.strip():
        skips.add("empty question", qas_id)
        return None
    if is_training and not is_impossible:
        if len(answers) != 1:
            skips.add("training question without exactly one answer", qas_id)
            return None
        answer = answers[0]
        if not answer.text.strip():
            skips.add("empty answer text", qas_id)
            return None
        end = answer.answer_start + len(answer.text)
        if answer.answer_start < 0 or end > len(context):
            raise SquadDataError(
                f"{where}: question {qas_id!r}: answer span [{answer.answer_start}, {end}) "
                f"(answer_start + length of its text) lies outside its context "
                f"[0, {len(context)})")
        if context[answer.answer_start:end] != answer.text:
            skips.add("answer_start does not point at the answer text", qas_id)
            return None
    return SquadExample(qas_id, question, context, answers, is_impossible, paragraph_id)


def shuffle_training_examples(examples: list[SquadExample]) -> list[SquadExample]:
    """A copy of `examples` shuffled as the original shuffles training data (seed 12345)."""
    shuffled = list(examples)
    random.Random(TRAINING_SHUFFLE_SEED).shuffle(shuffled)
    return shuffled
