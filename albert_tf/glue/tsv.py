"""Reading GLUE's TSV files as they ship: tab-separated, no quoting, CRLF, BOM (faithfulness §8.2).

The original reads every GLUE file with a tab delimiter and *no* quote handling, so quote
characters stay in the text (MNLI, QNLI and QQP have unbalanced quotes that a CSV parser
would join across lines). We do the same and also accept what the downloads contain in the
wild: a UTF-8 byte-order mark, Windows line endings and blank lines. Every row keeps its
1-based line number so an error can name the file and the line.
"""

from __future__ import annotations

import dataclasses

from albert_tf.runtime import paths


class GlueDataError(ValueError):
    """Bad GLUE input; the message names the file (and the line when there is one)."""


@dataclasses.dataclass(frozen=True)
class TsvRow:
    """One non-blank line: its 1-based number in the file and its tab-separated fields."""

    line: int
    fields: list[str]


def read_bytes(path: str) -> bytes:
    """A file's bytes; `gs://`-style paths go through tf.io.gfile as in the original."""
    if not paths.isfile(path):
        raise GlueDataError(f"{path}: file not found")
    return paths.read_bytes(path)


def decode_utf8(data: bytes, path: str) -> str:
    """UTF-8 text without a leading BOM; undecodable bytes raise naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise GlueDataError(f"{path}: line {line}: not valid UTF-8 ({e.reason})") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_tsv(path: str) -> list[TsvRow]:
    """All non-blank rows of a GLUE TSV file.

    Lines end at "\\n" only (a stray "\\r" inside a field is text, a trailing "\\r" is the
    CRLF ending and is dropped); fields are split at every tab; quotes are left alone.
    """
    text = decode_utf8(read_bytes(path), path)
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip() == "":
            continue
        rows.append(TsvRow(number, line.split("\t")))
    return rows
