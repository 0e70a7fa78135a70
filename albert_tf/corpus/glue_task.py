"""A learnable sentence-pair task in GLUE's MRPC layout, built from the built-in corpus.

Default ("paraphrase"): "is sentence b a condensed copy of sentence a?" — label 1 when b is a
with about a quarter of its words deleted, 0 when b is a sentence of another document. The
alternative "next_sentence" asks whether b follows a in its document. Train, dev and test
come from disjoint documents. The files use MRPC's columns (`Quality`, `#1 ID`, `#2 ID`, `#1 String`,
`#2 String`; test: `index` first), so `run_classifier.py --task_name=mrpc
--data_dir=<output_dir>` fine-tunes on it with no new code: the demo's GLUE task, and a check
that fine-tuning learns and that pretraining helps.

    python -m albert_tf.corpus.make_glue_task --output_dir=/tmp/corpus_glue   (the CLI)

Example:
    >>> counts = build_corpus_task("/tmp/corpus_glue", corpus_path="corpus.txt")
    >>> counts  # {"train": 8000, "dev": 400, "test": 400}
"""

from __future__ import annotations

import os
import random
from typing import Sequence

from absl import logging

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.corpus.documents import read_documents

MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
TEST_HEADER = ("index", "#1 ID", "#2 ID", "#1 String", "#2 String")


KINDS = ("paraphrase", "next_sentence")


def _shorten(sentence: str, rng: random.Random, drop: float = 0.25) -> str:
    """The sentence with about `drop` of its words removed (at least one, order kept)."""
    words = sentence.split()
    count = max(1, int(round(drop * len(words))))
    removed = set(rng.sample(range(len(words)), count))
    return " ".join(w for k, w in enumerate(words) if k not in removed)


def make_pairs(documents: Sequence[Sequence[str]], num_pairs: int, rng: random.Random,
               id_offset: int = 0, kind: str = "paraphrase"
               ) -> list[tuple[int, int, int, str, str]]:
    """`num_pairs` balanced (label, id_a, id_b, a, b) rows.

    kind "paraphrase": label 1 when b is a condensed copy of a (about a quarter of its words
    deleted, order kept), 0 when b is a sentence of another document. Overlap and relative
    length both tell the classes apart.
    kind "next_sentence": label 1 when b is the sentence after a in its document, 0 when b
    is a sentence of another document. Much harder: a tiny model from scratch stays at
    chance for hundreds of steps (the pooled [CLS] output starts almost input-independent).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if len(documents) < 2:
        raise ValueError("need at least two documents with two or more sentences")
    starts, total = [], 0
    for doc in documents:  # sentence ids: running index over the documents
        starts.append(total)
        total += len(doc)
    rows = []
    for k in range(num_pairs):
        d = rng.randrange(len(documents))
        i = rng.randrange(len(documents[d]) - 1)
        label = k % 2
        if label:
            e, j = (d, i) if kind == "paraphrase" else (d, i + 1)
        else:
            e = rng.randrange(len(documents) - 1)
            e += e >= d  # any other document
            j = rng.randrange(len(documents[e]))
        b = documents[e][j]
        if kind == "paraphrase" and label:
            b = _shorten(b, rng)
        rows.append((label, id_offset + starts[d] + i, id_offset + starts[e] + j,
                     documents[d][i], b))
    rng.shuffle(rows)
    return rows


def write_tsv(path: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A GLUE-format TSV file (header, then one row per line), written whole or not at all."""
    with atomic_file(path, newline="\n") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(str(x) for x in row) + "\n")


def build_corpus_task(output_dir: str, corpus_path: str | None = None, num_train: int = 8000,
                      num_dev: int = 400, num_test: int = 400, seed: int = 12345,
                      max_documents: int | None = None, kind: str = "paraphrase",
                      min_words: int = 4, max_words: int = 20) -> dict[str, int]:
    """Writes `<output_dir>/MRPC/{train,dev,test}.tsv`; returns the row count per split.

    Args:
      output_dir: the GLUE data_dir to create.
      corpus_path: one sentence per line, blank line between documents; default: the
        built-in corpus (written to `output_dir/corpus.txt` first).
      num_train, num_dev, num_test: pairs per split (balanced labels).
      seed: the task is a deterministic function of corpus and seed.
      max_documents: limit of the built-in corpus (smaller, faster).
      kind: which task, see `make_pairs`.
      min_words, max_words: sentence lengths used (short sentences train fast).
    """
    paths.makedirs(os.path.join(output_dir, "MRPC"))
    if corpus_path is None:
        from albert_tf.corpus import build_corpus

        corpus_path = os.path.join(output_dir, "corpus.txt")
        build_corpus(corpus_path, max_documents)
    documents = read_documents(corpus_path, min_words, max_words)
    rng = random.Random(seed)
    order = list(range(len(documents)))
    rng.shuffle(order)
    shuffled = [documents[i] for i in order]
    # Documents split 70/15/15 so no sentence appears in two splits.
    n = len(shuffled)
    cut1, cut2 = int(0.7 * n), int(0.85 * n)
    parts = {"train": (shuffled[:cut1], num_train), "dev": (shuffled[cut1:cut2], num_dev),
             "test": (shuffled[cut2:], num_test)}
    counts, offset = {}, 0
    for split, (docs, count) in parts.items():
        rows = make_pairs(docs, count, rng, id_offset=offset, kind=kind)
        offset += sum(len(d) for d in docs)
        path = os.path.join(output_dir, "MRPC", f"{split}.tsv")
        if split == "test":
            write_tsv(path, TEST_HEADER, [(k, *row[1:]) for k, row in enumerate(rows)])
        else:
            write_tsv(path, MRPC_HEADER, rows)
        counts[split] = len(rows)
    logging.info("Wrote %s/MRPC: %s pairs from %d documents", output_dir, counts, n)
    return counts
