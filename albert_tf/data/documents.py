"""Raw text → tokenized documents for create_pretraining_data (faithfulness §5.2).

Input: one sentence per line, a blank line between documents. Each line is preprocessed
(SentencePiece mode: `preprocess_text(line, lower=do_lower_case)`; WordPiece: `strip()`) and
tokenized once; a line empty after preprocessing starts a new document, a line that
tokenizes to nothing is skipped. As in the original, the document list is not reset between
files, so a file that does not end with a blank line runs into the next one.

The corpus is kept as flat numpy arrays (ids, §5.7 word-start flags, sentence and document
offsets) so worker processes share it copy-on-write and instances are slices.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

import numpy as np

from albert_tf.runtime import paths
from albert_tf.tokenization import FullTokenizer, preprocess_text

DOCUMENT_BREAK = -1  # line length marking "empty after preprocessing"


class InputError(ValueError):
    """Bad input: the message names the file (and line) or flag at fault."""


@dataclasses.dataclass
class InputStats:
    """What reading the input found; reported at the end and stored in the JSON summary."""

    files: list[str] = dataclasses.field(default_factory=list)
    empty_files: list[str] = dataclasses.field(default_factory=list)
    lines: int = 0
    invalid_utf8_lines: int = 0
    empty_token_lines: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class TokenizedCorpus:
    """Documents as flat arrays.

    token_ids[sentence_offsets[s]:sentence_offsets[s+1]] are the ids of sentence s;
    documents are sentence ranges [doc_starts[d], doc_ends[d]).
    """

    token_ids: np.ndarray  # int32 [T]
    word_starts: np.ndarray  # bool [T]
    sentence_offsets: np.ndarray  # int64 [N + 1]
    doc_starts: np.ndarray  # int64 [D]
    doc_ends: np.ndarray  # int64 [D]

    @property
    def num_documents(self) -> int:
        return len(self.doc_starts)

    @property
    def num_sentences(self) -> int:
        return len(self.sentence_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    def permuted(self, order: np.ndarray) -> "TokenizedCorpus":
        """The same corpus with documents in `order` (the original's document shuffle)."""
        return dataclasses.replace(self, doc_starts=self.doc_starts[order], doc_ends=self.doc_ends[order])


def expand_input_patterns(input_file: str, flag: str = "--input_file") -> list[str]:
    """Comma-separated globs → files in the given order, each glob sorted (as gfile.Glob)."""
    files: list[str] = []
    for pattern in (p.strip() for p in input_file.split(",")):
        if not pattern:
            continue
        matched = sorted(_glob(pattern))
        if not matched:
            raise InputError(f"{flag}: {pattern!r} matches no file")
        files.extend(matched)
    if not files:
        raise InputError(f"{flag} is empty")
    return files


def _glob(pattern: str) -> list[str]:
    return [p for p in paths.glob(pattern) if paths.isfile(p)]


def _read(path: str) -> bytes:
    return paths.read_bytes(path)


def read_lines(files: Sequence[str], stats: InputStats, invalid_utf8: str = "error",
               warn: Callable[[str], None] = print) -> list[str]:
    """All lines of all files in order (universal newlines, like text-mode reading).

    Args:
      invalid_utf8: "error" raises InputError naming file and line; "skip_line" drops the
        line and counts it.
    """
    lines: list[str] = []
    for path in files:
        data = _read(path)
        stats.files.append(path)
        if not data.strip():
            stats.empty_files.append(path)
            warn(f"{path}: empty file, skipped")
            continue
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        try:
            text = data.decode("utf-8")
            file_lines = text.split("\n")
        except UnicodeDecodeError as e:
            line_no = data[:e.start].count(b"\n") + 1
            if invalid_utf8 == "error":
                raise InputError(f"{path}:{line_no}: invalid UTF-8 byte 0x{data[e.start]:02x} "
                                 f"(use --invalid_utf8=skip_line to drop such lines)") from None
            file_lines = []
            for number, raw in enumerate(data.split(b"\n"), 1):
                try:
                    file_lines.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    stats.invalid_utf8_lines += 1
                    warn(f"{path}:{number}: invalid UTF-8, line skipped")
        if file_lines and file_lines[-1] == "":
            file_lines.pop()  # the newline ending the last line does not start another line
        lines.extend(file_lines)
    stats.lines = len(lines)
    return lines


class LineTokenizer:
    """Preprocesses and tokenizes lines into ids and §5.7 word-start flags."""

    def __init__(self, tokenizer: FullTokenizer, do_lower_case: bool):
        self.tokenizer = tokenizer
        self.do_lower_case = do_lower_case
        self._starts: dict[str, bool] = {}
        self._unk = tokenizer.unk_id

    def _prepare(self, line: str) -> str:
        if self.tokenizer.uses_sentencepiece:
            return preprocess_text(line, lower=self.do_lower_case)
        return line.strip()

    def __call__(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids int32 [T], word_starts bool [T], lengths int32 [len(lines)]) with length
        DOCUMENT_BREAK for lines empty after preprocessing."""
        prepared = [self._prepare(line) for line in lines]
        nonempty = [p for p in prepared if p]
        pieces_per_line = iter(self.tokenizer.tokenize_batch(nonempty))
        vocab, starts, unk = self.tokenizer.vocab, self._starts, self._unk
        ids: list[int] = []
        flags: list[bool] = []
        lengths = np.empty(len(lines), np.int32)
        for i, text in enumerate(prepared):
            if not text:
                lengths[i] = DOCUMENT_BREAK
                continue
            pieces = next(pieces_per_line)
            lengths[i] = len(pieces)
            for piece in pieces:
                flag = starts.get(piece)
                if flag is None:
                    flag = starts[piece] = self.tokenizer.is_start_piece(piece)
                flags.append(flag)
                ids.append(vocab.get(piece, unk))
        return np.asarray(ids, np.int32), np.asarray(flags, bool), lengths


def assemble(chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], stats: InputStats) -> TokenizedCorpus:
    """Joins tokenized line chunks into documents (§5.2 document rules)."""
    id_parts, flag_parts, sentence_lengths = [], [], []
    doc_starts, doc_ends = [], []
    current_start = 0
    for ids, flags, lengths in chunks:
        id_parts.append(ids)
        flag_parts.append(flags)
        for length in lengths.tolist():
            if length == DOCUMENT_BREAK:
                if len(sentence_lengths) > current_start:
                    doc_starts.append(current_start)
                    doc_ends.append(len(sentence_lengths))
                current_start = len(sentence_lengths)
            elif length == 0:
                stats.empty_token_lines += 1
            else:
                sentence_lengths.append(length)
    if len(sentence_lengths) > current_start:
        doc_starts.append(current_start)
        doc_ends.append(len(sentence_lengths))
    offsets = np.zeros(len(sentence_lengths) + 1, np.int64)
    np.cumsum(sentence_lengths, out=offsets[1:])
    return TokenizedCorpus(
        token_ids=np.concatenate(id_parts) if id_parts else np.zeros(0, np.int32),
        word_starts=np.concatenate(flag_parts) if flag_parts else np.zeros(0, bool),
        sentence_offsets=offsets,
        doc_starts=np.asarray(doc_starts, np.int64),
        doc_ends=np.asarray(doc_ends, np.int64))
