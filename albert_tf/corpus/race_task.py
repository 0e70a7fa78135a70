"""A learnable RACE-format task built from the built-in corpus (or any one-sentence-per-line text).

Each "article" is a run of consecutive sentences of one document (middle level:
`middle_sentences` sentences, high level: `high_sentences`; at most `max_article_words`
words). Two kinds of task:

* "phrase" (default) — "which phrase appears in the text?": the right option is a run of
  6–8 consecutive words of the article, the three others are runs of words of other
  documents. Each article asks it twice: once as a plain question (question + " " +
  option) and once as a cloze question (`... words: _`, the option fills the blank), the
  two forms of faithfulness §10.3. Solving it needs the article (every option is a plausible phrase
  on its own), and a tiny encoder learns it from scratch in a short run.
* "next_sentence" — "which sentence follows the article's last one?" (cloze form) and,
  when the article does not open its document, "which sentence comes right before it?";
  the distractors are sentences of other documents. This is closer to reading
  comprehension and needs a pretrained encoder: a tiny randomly initialised one stays near
  chance in a short run.

Train, dev and test come from disjoint documents. Files follow the official layout
(`<output_dir>/RACE/{train,dev,test}/{middle,high}/<n>.txt`, one JSON object each), so
`run_race.py --data_dir=<output_dir>` fine-tunes on it with no new code.

    python -m albert_tf.corpus.make_race_task --output_dir=/tmp/corpus_race   (the CLI)

Example:
    >>> counts = build_race_corpus_task("/tmp/corpus_race", corpus_path="corpus.txt")
    >>> counts["train"]  # {"articles": 4000, "questions": 8000}
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Callable, Sequence

from absl import logging

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.corpus.documents import read_documents
from albert_tf.race.examples import ANSWER_LETTERS, LEVELS, NUM_OPTIONS

KINDS = ("phrase", "next_sentence")
PHRASE_QUESTION = "Which phrase appears in the text?"
PHRASE_CLOZE = "The text contains the words: _"
NEXT_QUESTION = "The text continues with: _"
PREVIOUS_QUESTION = "Which sentence comes right before the text?"
PHRASE_WORDS = (6, 8)
_DRAWS = 5  # attempts per document at a distractor that is not in the article

Documents = Sequence[Sequence[str]]


def _phrase(sentences: Sequence[str], rng: random.Random) -> str:
    """A run of 6–8 consecutive words of the text (all of it when shorter)."""
    words = " ".join(sentences).split()
    size = min(rng.randint(*PHRASE_WORDS), len(words))
    start = rng.randrange(len(words) - size + 1)
    return " ".join(words[start:start + size])


def _options(documents: Documents, doc: int, answer: str, text: str, rng: random.Random,
             distractor: Callable[[Sequence[str]], str]) -> tuple[list[str], str]:
    """Four options — the answer at a random position, the others `distractor(document)` of
    three distinct other documents — and the answer's letter. A distractor that is the
    answer or occurs in the article (documents share boilerplate sentences) is drawn again."""
    others = [d for d in range(len(documents)) if d != doc]
    options: list[str] = []
    for d in rng.sample(others, min(len(others), 2 * NUM_OPTIONS)):
        for _ in range(_DRAWS):
            candidate = distractor(documents[d])
            if candidate != answer and candidate not in text and candidate not in options:
                options.append(candidate)
                break
        if len(options) == NUM_OPTIONS - 1:
            break
    else:
        raise ValueError("too few documents to draw distractors from")
    position = rng.randrange(NUM_OPTIONS)
    options.insert(position, answer)
    return options, ANSWER_LETTERS[position]


def article_windows(documents: Documents, num_sentences: int, max_article_words: int | None,
                    need_next: bool) -> list[tuple[int, int]]:
    """(document, first sentence) of every run of `num_sentences` sentences with at most
    `max_article_words` words (and a following sentence when `need_next`)."""
    windows = []
    for d, doc in enumerate(documents):
        last = len(doc) - num_sentences - (1 if need_next else 0)
        for start in range(last + 1):
            words = sum(len(s.split()) for s in doc[start:start + num_sentences])
            if max_article_words is None or words <= max_article_words:
                windows.append((d, start))
    return windows


def make_article(documents: Documents, window: tuple[int, int], num_sentences: int,
                 rng: random.Random, article_id: str, kind: str = "phrase") -> dict[str, Any]:
    """One article JSON object (the official RACE fields) from a window of a document."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    doc, start = window
    sentences = documents[doc]
    text = sentences[start:start + num_sentences]
    asked: list[tuple[str, str, Callable[[Sequence[str]], str]]] = []
    if kind == "phrase":
        def other_phrase(document):
            return _phrase([rng.choice(document)], rng)
        asked.append((PHRASE_QUESTION, _phrase(text, rng), other_phrase))
        asked.append((PHRASE_CLOZE, _phrase(text, rng), other_phrase))
    else:
        def other_sentence(document):
            return rng.choice(document)
        asked.append((NEXT_QUESTION, sentences[start + num_sentences], other_sentence))
        if start > 0:
            asked.append((PREVIOUS_QUESTION, sentences[start - 1], other_sentence))
    questions, options, answers = [], [], []
    article = " ".join(text)
    for question, answer, distractor in asked:
        choice, letter = _options(documents, doc, answer, article, rng, distractor)
        questions.append(question)
        options.append(choice)
        answers.append(letter)
    return {"answers": answers, "options": options, "questions": questions, "article": article,
            "id": article_id}


def _write_json(path: str, value: Any) -> None:
    with atomic_file(path) as f:
        json.dump(value, f, ensure_ascii=False)


def build_race_corpus_task(output_dir: str, corpus_path: str | None = None,
                           num_train: int = 4000, num_dev: int = 200, num_test: int = 200,
                           seed: int = 12345, max_documents: int | None = None,
                           kind: str = "phrase", middle_sentences: int = 1,
                           high_sentences: int = 2, max_words: int = 20,
                           max_article_words: int | None = 28) -> dict[str, dict[str, int]]:
    """Writes `<output_dir>/RACE/{train,dev,test}/{middle,high}/<n>.txt`.

    Args:
      output_dir: the RACE data_dir to create.
      corpus_path: one sentence per line, blank line between documents; default: the
        built-in corpus (written to `output_dir/corpus.txt` first).
      num_train, num_dev, num_test: articles per split, alternately middle and high.
      seed: the task is a deterministic function of corpus and seed.
      max_documents: limit of the built-in corpus (smaller, faster).
      kind: "phrase" or "next_sentence" (see the module docstring).
      middle_sentences, high_sentences: sentences per article of each level.
      max_words: longer sentences split documents (keeps sequences short).
      max_article_words: longest article, in words (None: any). The default keeps a whole
        article within a 64-token sequence, so no answer is lost to truncation.
    Returns:
      {split: {"articles": n, "questions": m}}.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    paths.makedirs(output_dir)
    if corpus_path is None:
        from albert_tf.corpus import build_corpus

        corpus_path = os.path.join(output_dir, "corpus.txt")
        build_corpus(corpus_path, max_documents)
    documents = read_documents(corpus_path, max_words=max_words)
    rng = random.Random(seed)
    rng.shuffle(documents)
    n = len(documents)
    cut1, cut2 = int(0.7 * n), int(0.85 * n)  # disjoint documents per split
    parts = {"train": (documents[:cut1], num_train), "dev": (documents[cut1:cut2], num_dev),
             "test": (documents[cut2:], num_test)}
    sizes = {"middle": middle_sentences, "high": high_sentences}
    counts: dict[str, dict[str, int]] = {}
    for split, (docs, num_articles) in parts.items():
        if len(docs) <= NUM_OPTIONS:
            raise ValueError(f"{corpus_path}: too few documents for the {split} split "
                             f"({len(docs)}); use a larger corpus")
        for level in LEVELS:
            paths.makedirs(os.path.join(output_dir, "RACE", split, level))
        windows = {level: article_windows(docs, sizes[level], max_article_words,
                                          need_next=kind == "next_sentence")
                   for level in LEVELS}
        for level, found in windows.items():
            if not found:
                raise ValueError(f"{corpus_path}: no {split} article of {sizes[level]} "
                                 f"sentence(s) within {max_article_words} words")
        questions = 0
        for k in range(num_articles):
            level = LEVELS[k % 2]
            number = k // 2 + 1
            article = make_article(docs, rng.choice(windows[level]), sizes[level], rng,
                                   f"{level}{number}.txt", kind)
            questions += len(article["questions"])
            _write_json(os.path.join(output_dir, "RACE", split, level, f"{number}.txt"), article)
        counts[split] = {"articles": num_articles, "questions": questions}
    logging.info("Wrote %s/RACE (%s): %s from %d documents", output_dir, kind, counts, n)
    return counts
