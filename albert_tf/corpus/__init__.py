"""A built-in English corpus (Python standard library documentation) and a tiny SentencePiece
model for tests, demos and benchmarks — no download needed.

    python -m albert_tf.corpus.build --output=corpus.txt

Example:
    >>> from albert_tf.corpus import build_corpus, train_tiny_spm, tiny_assets
    >>> stats = build_corpus("corpus.txt")          # one sentence per line, blank line between docs
    >>> model = train_tiny_spm("corpus.txt", "tiny")  # tiny.model, ~1000 pieces
    >>> corpus, model = tiny_assets("/tmp/albert_assets")  # both, cached in a directory
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.corpus.documents import read_documents
from albert_tf.corpus.stdlib_text import iter_documents

__all__ = ["CorpusStats", "build_corpus", "iter_documents", "read_documents", "tiny_assets",
           "train_tiny_spm"]


@dataclasses.dataclass(frozen=True)
class CorpusStats:
    path: str
    documents: int
    sentences: int
    words: int


def build_corpus(path: str, max_documents: int | None = None) -> CorpusStats:
    """Writes the stdlib corpus: one sentence per line, a blank line between documents.

    Deterministic for a given Python installation. Written to a temporary name and renamed.

    Args:
      path: output text file.
      max_documents: keep only the first N documents (smaller, faster test corpora).
    """
    documents = sentences = words = 0
    with atomic_file(path) as out:
        for _, doc in iter_documents():
            if max_documents is not None and documents >= max_documents:
                break
            if documents:
                out.write("\n")
            out.write("\n".join(doc) + "\n")
            documents += 1
            sentences += len(doc)
            words += sum(len(s.split()) for s in doc)
    return CorpusStats(path, documents, sentences, words)


def train_tiny_spm(corpus_path: str, model_prefix: str, vocab_size: int = 1000) -> str:
    """A small SentencePiece model with the original's options (§7.4) but `vocab_size` pieces
    and a 100k-sentence sample; returns the `.model` path. Takes a few seconds."""
    from albert_tf.data.sentencepiece import train_sentencepiece

    return train_sentencepiece(corpus_path, model_prefix, vocab_size, input_sentence_size=100_000,
                               num_threads=min(2, os.cpu_count() or 1), seed_sentencepiece_size=200_000)


def tiny_assets(directory: str, vocab_size: int = 1000, max_documents: int | None = None) -> tuple[str, str]:
    """(corpus.txt, tiny.model) in `directory`, built on first use and reused afterwards."""
    suffix = "" if max_documents is None else f"_{max_documents}"
    corpus = os.path.join(directory, f"corpus{suffix}.txt")
    prefix = os.path.join(directory, f"spm{suffix}_{vocab_size}")
    if not paths.exists(corpus):
        build_corpus(corpus, max_documents)
    if not paths.exists(prefix + ".model"):
        train_tiny_spm(corpus, prefix, vocab_size)
    return corpus, prefix + ".model"
