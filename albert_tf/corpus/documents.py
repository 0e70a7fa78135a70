"""Documents of a corpus text file, for the learnable corpus tasks (GLUE, RACE).

The file is the built-in corpus' format (`build_corpus`): one sentence per line, a blank
line between documents.

Example:
    >>> documents = read_documents("corpus.txt")   # [["First sentence .", ...], ...]
"""

from __future__ import annotations

from albert_tf.runtime import paths


def read_documents(path: str, min_words: int = 4, max_words: int = 40) -> list[list[str]]:
    """Documents (lists of sentences) of a one-sentence-per-line, blank-line-separated file.

    Sentences outside [min_words, max_words] split a document (so "next" stays literal);
    documents of fewer than two sentences are dropped."""
    documents, current = [], []

    def close():
        if len(current) >= 2:
            documents.append(list(current))
        current.clear()

    with paths.open_file(path) as f:
        for line in f:
            sentence = " ".join(line.replace("\t", " ").split())
            if not sentence:
                close()
            elif min_words <= len(sentence.split()) <= max_words:
                current.append(sentence)
            else:
                close()
    close()
    return documents
