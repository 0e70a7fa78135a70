"""Reading RACE: both directory layouts, validation, one example per question (faithfulness §10.2).

Layout: `<data_dir>/RACE/{train,dev,test}/{middle,high}/`, levels read middle then high
(`high_only` / `middle_only` keep one; an absent level directory is skipped with a log line);
each level directory in the official or the original's layout (`albert_tf.race.layout`).
Each article has `id`, `article`, `questions`, `options` (4 per question) and `answers`
(letters A–D); `answers` may be absent only where labels are not needed (predicting, faithfulness
Q28 fixed). Every text passes through `preprocess_text(lower=do_lower_case)` (SentencePiece)
or is only decoded (WordPiece), as the original. Bad input raises `RaceDataError` with one
line naming the file (and the line of `all.txt`); nothing is skipped silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any, Sequence

from absl import logging

from albert_tf.race.layout import RaceDataError, article_files, is_dir, iter_articles
from albert_tf.race.questions import qa_texts
from albert_tf.tokenization import convert_to_unicode, preprocess_text

SPLITS = ("train", "dev", "test")
LEVELS = ("middle", "high")
ANSWER_LETTERS = ("A", "B", "C", "D")
NUM_OPTIONS = len(ANSWER_LETTERS)
REQUIRED_KEYS = ("id", "article", "questions", "options", "answers")


@dataclasses.dataclass(frozen=True)
class RaceExample:
    """One question: its article (processed), the four question+option texts, the label.

    Attributes:
      example_id: the article's `id`.
      question_index: 0-based index of the question in the article's `questions`.
      level: "middle" or "high".
      context: the processed article text.
      qa_texts: the four texts paired with the article, option A first (faithfulness §10.3).
      label: 0–3 for A–D, or None when the article has no `answers`.
    """

    example_id: str
    question_index: int
    level: str
    context: str
    qa_texts: tuple[str, ...]
    label: int | None


@dataclasses.dataclass
class RaceSplit:
    """The examples of one split, a digest of the bytes they were read from, the number of
    files and the levels read (those whose directory exists, in reading order)."""

    examples: list[RaceExample]
    source_digest: str
    files: int
    levels: tuple[str, ...] = ()


def levels_to_read(high_only: bool = False, middle_only: bool = False) -> tuple[str, ...]:
    """The levels in reading order: middle then high, or the one asked for."""
    if high_only and middle_only:
        raise RaceDataError("high_only and middle_only exclude each other")
    if high_only:
        return ("high",)
    if middle_only:
        return ("middle",)
    return LEVELS


# ----- validation -----
def _string(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise RaceDataError(f"{where}: {what} must be a string, found {type(value).__name__}")
    return value


def _list(value: Any, where: str, what: str) -> list:
    if not isinstance(value, list):
        raise RaceDataError(f"{where}: {what} must be a list, found {type(value).__name__}")
    return value


def validate_article(article: Any, where: str, require_answers: bool) -> dict[str, Any]:
    """The article's fields, checked: keys present, 4 options and an answer A–D per question.

    Returns {"id", "article", "questions", "options", "answers" (None if absent)}.
    """
    if not isinstance(article, dict):
        raise RaceDataError(f"{where}: expected a JSON object (one article), found "
                            f"{type(article).__name__}")
    required = REQUIRED_KEYS if require_answers else tuple(k for k in REQUIRED_KEYS if k != "answers")
    missing = [key for key in required if key not in article]
    if missing:
        raise RaceDataError(f"{where}: missing key{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(repr(k) for k in missing)}")
    article_id = article["id"]
    if not isinstance(article_id, (str, int)) or isinstance(article_id, bool):
        raise RaceDataError(f"{where}: 'id' must be a string, found {type(article_id).__name__}")
    text = _string(article["article"], where, "'article'")
    questions = _list(article["questions"], where, "'questions'")
    options = _list(article["options"], where, "'options'")
    answers = article.get("answers")
    if len(options) != len(questions):
        raise RaceDataError(f"{where}: {len(questions)} questions but {len(options)} option lists")
    if answers is not None:
        answers = _list(answers, where, "'answers'")
        if len(answers) != len(questions):
            raise RaceDataError(f"{where}: {len(questions)} questions but {len(answers)} answers")
    for i, question in enumerate(questions):
        at = f"{where}: question {i + 1}"
        _string(question, at, "the question")
        choice = _list(options[i], at, "the options")
        if len(choice) != NUM_OPTIONS:
            raise RaceDataError(f"{at}: expected {NUM_OPTIONS} options, found {len(choice)}")
        for option in choice:
            _string(option, at, "each option")
        if answers is not None and answers[i] not in ANSWER_LETTERS:
            raise RaceDataError(f"{at}: answer {answers[i]!r} is not one of "
                                f"{', '.join(ANSWER_LETTERS)}")
    return {"id": str(article_id), "article": text, "questions": questions, "options": options,
            "answers": answers}


# ----- examples -----
class TextProcessor:
    """The original's `process_text`: preprocess_text for SentencePiece, decoding for WordPiece."""

    def __init__(self, use_spm: bool = True, do_lower_case: bool = True):
        self.use_spm = use_spm
        self.do_lower_case = do_lower_case

    def __call__(self, text: str) -> str:
        if self.use_spm:
            return preprocess_text(text, lower=self.do_lower_case)
        return convert_to_unicode(text)


def article_examples(fields: dict[str, Any], level: str, process: TextProcessor
                     ) -> list[RaceExample]:
    """One example per question of a validated article (faithfulness §10.2–10.3)."""
    context = process(fields["article"])
    examples = []
    for i, question in enumerate(fields["questions"]):
        texts = qa_texts(process(question), [process(o) for o in fields["options"][i]])
        answer = fields["answers"][i] if fields["answers"] is not None else None
        label = ANSWER_LETTERS.index(answer) if answer is not None else None
        examples.append(RaceExample(fields["id"], i, level, context, tuple(texts), label))
    return examples


def split_dir(data_dir: str, split: str) -> str:
    """`<data_dir>/RACE/<split>`."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return os.path.join(data_dir, "RACE", split)


def read_race_split(data_dir: str, split: str, levels: Sequence[str] = LEVELS,
                    use_spm: bool = True, do_lower_case: bool = True,
                    require_answers: bool = True) -> RaceSplit:
    """Every question of `<data_dir>/RACE/<split>/<level>/` for the levels, in order.

    Raises:
      RaceDataError: bad input (one line naming the file), or no example at all.
    """
    process = TextProcessor(use_spm, do_lower_case)
    base = split_dir(data_dir, split)
    hasher = hashlib.sha256()
    examples: list[RaceExample] = []
    num_files = 0
    read: list[str] = []
    for level in levels:
        level_dir = os.path.join(base, level)
        if not is_dir(level_dir):
            logging.info("RACE %s: no %s directory %s; skipped", split, level, level_dir)
            continue
        read.append(level)
        files = article_files(level_dir)
        if not files:
            logging.warning("RACE %s: %s holds no *.txt file", split, level_dir)
        before = len(examples)
        for path in files:
            num_files += 1
            for where, article in iter_articles(path, hasher):
                fields = validate_article(article, where, require_answers)
                examples += article_examples(fields, level, process)
        logging.info("RACE %s %s: %d questions from %d file(s) in %s", split, level,
                     len(examples) - before, len(files), level_dir)
    if not examples:
        raise RaceDataError(f"{base}: no RACE question found under {' or '.join(levels)}/")
    return RaceSplit(examples, hasher.hexdigest()[:16], num_files, tuple(read))
