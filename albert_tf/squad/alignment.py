"""SentencePiece pieces ↔ characters of the raw context, as the original aligns them (faithfulness §9.3).

The pieces come from the *preprocessed* context (whitespace collapsed, accents stripped,
maybe lower-cased; SentencePiece normalises further), so piece offsets cannot be read off
the raw text. The original joins the pieces (`▁` → space) and aligns that text to the raw
context with a banded longest-common-subsequence; every piece then gets the raw-character
span it covers, and an answer's character span maps back to pieces through the same
alignment. Contexts where less than 80% of the characters align are dropped (Q26, kept).

Example (a piece's span includes the space its "▁" stands for; answers are stripped):
    >>> tokens = align_pieces("Café au lait", ["▁cafe", "▁au", "▁la", "it"], lower=True)
    >>> tokens.char_start, tokens.char_end
    ([0, 4, 7, 10], [3, 6, 9, 11])
    >>> tokens.span_text("Café au lait", *tokens.piece_span(0, 3))
    'Café'
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from albert_tf.tokenization import SPIECE_UNDERLINE, FullTokenizer, preprocess_text

MIN_ALIGNED_FRACTION = 0.8  # below this the example is skipped (§9.3 step 4)
_UP, _LEFT, _DIAG = 0, 1, 2


@dataclasses.dataclass
class ContextTokens:
    """A paragraph's pieces with raw-context character spans.

    Attributes:
      pieces: SentencePiece pieces of the preprocessed context.
      char_start / char_end: per piece, the first / last raw character it covers (the
        original's `tok_start_to_orig_index` / `tok_end_to_orig_index`).
      raw_to_joined: per raw character, its partner in the joined piece text or None.
      joined_to_piece: per joined-text character, the index of its piece.
    """

    pieces: list[str]
    char_start: list[int]
    char_end: list[int]
    raw_to_joined: list[int | None]
    joined_to_piece: list[int]

    def piece_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """Pieces (first, last) holding raw characters [char_start, char_end] (§9.3 step 6)."""
        joined_start = project(self.raw_to_joined, char_start, is_end=False)
        joined_end = project(self.raw_to_joined, char_end, is_end=True)
        return self.joined_to_piece[joined_start], self.joined_to_piece[joined_end]

    def span_text(self, context: str, first_piece: int, last_piece: int) -> str:
        """The raw-context text of pieces [first_piece, last_piece], stripped (§9.7)."""
        return context[self.char_start[first_piece]:self.char_end[last_piece] + 1].strip()


def join_pieces(pieces: Sequence[str]) -> tuple[str, list[int], list[int], list[int]]:
    """The pieces' text with `▁` as space, each piece's first and last offset in it, and
    the piece index of every character (§9.3 step 2)."""
    parts, starts, ends, owner = [], [], [], []
    offset = 0
    for index, piece in enumerate(pieces):
        text = piece.replace(SPIECE_UNDERLINE, " ")
        parts.append(text)
        starts.append(offset)
        ends.append(offset + len(text) - 1)
        owner.extend([index] * len(text))
        offset += len(text)
    return "".join(parts), starts, ends, owner


def banded_lcs(source: Sequence[str], target: str, band: int
               ) -> tuple[int, dict[int, int], dict[int, int]]:
    """Longest common subsequence of `source` (one normalised string per raw character)
    and `target`, over cells with i − band ≤ j < i + band (§9.3 step 3).

    Ties prefer "up" (skip a source char), then "left" only if strictly larger, then the
    diagonal match only if strictly larger, as the original. Backtracking starts at
    (n−1, m−1) and stops at a cell outside the band or without a move.

    Returns:
      (LCS length at (n−1, m−1), source index → target index, target index → source index).
    """
    n, m = len(source), len(target)
    if n == 0 or m == 0:
        return 0, {}, {}
    rows: list[tuple[int, list[int], list[int]]] = []  # (first j, values, moves) per row
    previous: tuple[int, list[int]] | None = None

    def value_at(row: tuple[int, list[int]] | None, j: int) -> int:
        if row is None or j < 0:
            return 0
        lo, values = row
        k = j - lo
        return values[k] if 0 <= k < len(values) else 0

    for i in range(n):
        lo, hi = max(0, i - band), min(m, i + band)
        values = [0] * max(0, hi - lo)
        moves = [-1] * max(0, hi - lo)
        char = source[i]
        for j in range(lo, hi):
            k = j - lo
            value, move = 0, -1
            if i > 0:
                value, move = value_at(previous, j), _UP
            left = values[k - 1] if k > 0 else 0
            if j > 0 and left > value:
                value, move = left, _LEFT
            if char == target[j]:
                diagonal = value_at(previous, j - 1) if i > 0 and j > 0 else 0
                if diagonal + 1 > value:
                    value, move = diagonal + 1, _DIAG
            values[k], moves[k] = value, move
        rows.append((lo, values, moves))
        previous = (lo, values)

    source_to_target: dict[int, int] = {}
    target_to_source: dict[int, int] = {}
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        lo, _, moves = rows[i]
        k = j - lo
        if not 0 <= k < len(moves) or moves[k] < 0:
            break
        if moves[k] == _DIAG:
            source_to_target[i], target_to_source[j] = j, i
            i, j = i - 1, j - 1
        elif moves[k] == _LEFT:
            j -= 1
        else:
            i -= 1
    lo, values, _ = rows[n - 1]
    length = values[m - 1 - lo] if 0 <= m - 1 - lo < len(values) else 0
    return length, source_to_target, target_to_source


def project(mapping: Sequence[int | None], index: int, is_end: bool, cap: int | None = None) -> int:
    """Partner of position `index` through a partial alignment `mapping` (§9.3 step 5).

    An aligned position maps to its partner. Otherwise the nearest aligned neighbours on
    the left (partner l) and right (partner r) decide, by the original's table: "start"
    positions take the first character after l, "end" positions the last before r;
    `cap` (the target length) lets a trailing start/end run up to the target's end.
    """
    partner = mapping[index]
    if partner is not None:
        return partner
    left = next((mapping[k] for k in range(index - 1, -1, -1) if mapping[k] is not None), None)
    right = next((mapping[k] for k in range(index + 1, len(mapping)) if mapping[k] is not None),
                 None)
    if left is None:
        if right is None:
            raise ValueError("nothing is aligned")
        if right >= 1:
            return right - 1 if is_end else 0
        return right
    if right is None:
        if cap is not None and left < cap - 1:
            return cap - 1 if is_end else left + 1
        return left
    if right > left + 1:
        return right - 1 if is_end else left + 1
    return left if is_end else right


def align_pieces(context: str, pieces: Sequence[str], lower: bool) -> ContextTokens | None:
    """Raw-character spans of `pieces` (tokenized from `context`), or None when the
    alignment covers less than 80% of the context (the original skips such examples)."""
    joined, joined_start, joined_end, joined_to_piece = join_pieces(pieces)
    normalised = [preprocess_text(c, remove_space=False, lower=lower) for c in context]
    n, m = len(context), len(joined)
    band = abs(n - m) + 5
    length, raw_to_joined_map, joined_to_raw_map = banded_lcs(normalised, joined, band)
    if length <= MIN_ALIGNED_FRACTION * n:  # one retry with a twice wider band
        length, raw_to_joined_map, joined_to_raw_map = banded_lcs(normalised, joined, 2 * band)
    if not raw_to_joined_map or length < MIN_ALIGNED_FRACTION * n:
        return None
    raw_to_joined = [raw_to_joined_map.get(i) for i in range(n)]
    joined_to_raw = [joined_to_raw_map.get(j) for j in range(m)]
    char_start = [project(joined_to_raw, s, is_end=False, cap=n) for s in joined_start]
    char_end = [project(joined_to_raw, e, is_end=True, cap=n) for e in joined_end]
    return ContextTokens(list(pieces), char_start, char_end, raw_to_joined, joined_to_piece)


def tokenize_context(tokenizer: FullTokenizer, context: str, lower: bool) -> ContextTokens | None:
    """Pieces of `preprocess_text(context, lower)` aligned back to `context` (§9.3 steps 2–5)."""
    pieces = tokenizer.tokenize(preprocess_text(context, lower=lower))
    return align_pieces(context, pieces, lower)
