"""Question + option texts, the original's rule (faithfulness §10.3).

A cloze question (containing `_`) gets the option in place of every `_`; any other question
is followed by a space and the option. Texts are already processed (`preprocess_text`).

Example:
    >>> qa_texts("the cat sat on the _ .", ["mat", "hat", "bat", "cat"])[0]
    'the cat sat on the mat .'
    >>> qa_texts("where did the cat sit?", ["mat", "hat", "bat", "cat"])[0]
    'where did the cat sit? mat'
"""

from __future__ import annotations

from typing import Sequence

CLOZE_BLANK = "_"


def qa_text(question: str, option: str) -> str:
    """One question+option text."""
    if CLOZE_BLANK in question:
        return question.replace(CLOZE_BLANK, option)
    return " ".join([question, option])


def qa_texts(question: str, options: Sequence[str]) -> list[str]:
    """The texts of every option, in option order."""
    return [qa_text(question, option) for option in options]
