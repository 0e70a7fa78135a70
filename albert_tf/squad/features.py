"""SQuAD examples → fixed-length features: doc_stride windows, p_mask and labels (faithfulness §9.4).

Each window is `[CLS] query [SEP] window pieces [SEP]`, zero padded. `p_mask` marks what
cannot be an answer (query, both [SEP]s, padding; [CLS] stays open for "no answer").
A paragraph piece seen by several windows belongs, for prediction, to the window where
it has the most context (`token_is_max_context`). Training labels point at the answer's
pieces when the whole answer lies in the window, else at [CLS] (position 0) with
`is_impossible` = 1 — for SQuAD 1.1 too, as the original.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import numpy as np
from absl import logging

from albert_tf.squad.alignment import ContextTokens, tokenize_context
from albert_tf.squad.examples import SkipReport, SquadExample
from albert_tf.tokenization import FullTokenizer, preprocess_text

FIRST_UNIQUE_ID = 1000000000  # the original numbers features from here
ALIGNMENT_SKIP = "context pieces do not align with the raw context (< 80% of characters)"


@dataclasses.dataclass
class SquadFeature:
    """One window of one example.

    Attributes:
      unique_id: the feature's id, linking model outputs back to it.
      example_index: index of the example in the list the features were built from.
      qas_id: the example's question id (checked when a cached feature file is reused).
      doc_span_index: the window's index within its example.
      tokens: the pieces of the full sequence ([CLS] query [SEP] window [SEP]).
      doc_offset: sequence position of the window's first piece (len(query) + 2).
      char_start / char_end: per window piece, the raw characters it covers.
      token_is_max_context: per window piece, whether this window owns it.
      input_ids, input_mask, segment_ids, p_mask: int arrays [max_seq_length].
      start_position, end_position, is_impossible: labels (0 / 0 / True when absent).
    """

    unique_id: int
    example_index: int
    qas_id: str
    doc_span_index: int
    tokens: list[str]
    doc_offset: int
    char_start: list[int]
    char_end: list[int]
    token_is_max_context: list[bool]
    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray
    p_mask: np.ndarray
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = True

    @property
    def window_length(self) -> int:
        """Number of paragraph pieces in this window."""
        return len(self.char_start)

    def is_max_context(self, position: int) -> bool:
        """Whether sequence `position` is a window piece this window owns."""
        k = position - self.doc_offset
        return 0 <= k < len(self.token_is_max_context) and self.token_is_max_context[k]


def doc_windows(num_pieces: int, max_tokens_for_doc: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) of each window over `num_pieces` pieces (§9.4).

    Each window holds up to `max_tokens_for_doc` pieces; the next one starts
    min(length, doc_stride) further on; the last reaches the end.
    """
    windows = []
    start = 0
    while start < num_pieces:
        length = min(num_pieces - start, max_tokens_for_doc)
        windows.append((start, length))
        if start + length == num_pieces:
            break
        start += min(length, doc_stride)
    return windows


def max_context_flags(windows: Sequence[tuple[int, int]], index: int) -> list[bool]:
    """For window `index`, which of its pieces it owns: a piece belongs to the window
    maximising min(left context, right context) + 0.01 · window length (first wins ties)."""
    start, length = windows[index]
    flags = []
    for position in range(start, start + length):
        best_score, best_window = None, None
        for w, (w_start, w_length) in enumerate(windows):
            end = w_start + w_length - 1
            if position < w_start or position > end:
                continue
            score = min(position - w_start, end - position) + 0.01 * w_length
            if best_score is None or score > best_score:
                best_score, best_window = score, w
        flags.append(best_window == index)
    return flags


class FeatureBuilder:
    """Builds features for a list of examples; paragraph tokenization is shared by the
    questions of one paragraph (same result as the original's per-question work).

    Args:
      tokenizer: a SentencePiece FullTokenizer.
      max_seq_length, doc_stride, max_query_length: as the original's flags (§9.1).
      do_lower_case: passed to `preprocess_text` for question and context.
    """

    def __init__(self, tokenizer: FullTokenizer, max_seq_length: int = 384, doc_stride: int = 128,
                 max_query_length: int = 64, do_lower_case: bool = True):
        if max_seq_length <= max_query_length + 3:
            raise ValueError(f"max_seq_length ({max_seq_length}) must exceed max_query_length "
                             f"+ 3 ({max_query_length + 3})")
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.do_lower_case = do_lower_case
        self._paragraphs: dict[int, ContextTokens | None] = {}

    def context_tokens(self, example: SquadExample) -> ContextTokens | None:
        """The example's paragraph pieces with character spans (cached per paragraph)."""
        key = example.paragraph_id
        if key not in self._paragraphs or key == 0:
            self._paragraphs[key] = tokenize_context(
                self.tokenizer, example.context_text, self.do_lower_case)
        return self._paragraphs[key]

    def answer_pieces(self, example: SquadExample, tokens: ContextTokens) -> tuple[int, int] | None:
        """(first, last) piece of the first gold answer, or None (unanswerable / no answer)."""
        if example.is_impossible or not example.answers:
            return None
        start = example.answer_start
        return tokens.piece_span(start, start + len(example.answer_text) - 1)

    def build(self, examples: Sequence[SquadExample], with_labels: bool,
              skips: SkipReport | None = None, first_unique_id: int = FIRST_UNIQUE_ID
              ) -> list[SquadFeature]:
        """Features of all `examples`, numbered from `first_unique_id`.

        Args:
          with_labels: fill start/end/is_impossible from the first gold answer (training).
          skips: examples whose context does not align are counted here (Q26: the
            original drops them silently; prediction then gives the fallback text).
        """
        features: list[SquadFeature] = []
        unique_id = first_unique_id
        for example_index, example in enumerate(examples):
            built = self._example_features(example, example_index, with_labels, unique_id)
            if built is None:
                logging.warning("MISMATCH DETECTED! question %s: %s", example.qas_id, ALIGNMENT_SKIP)
                if skips is not None:
                    skips.add(ALIGNMENT_SKIP, example.qas_id)
                continue
            features.extend(built)
            unique_id += len(built)
            if (example_index + 1) % 1000 == 0:
                logging.info("features: %d examples → %d features", example_index + 1, len(features))
        return features

    def _example_features(self, example: SquadExample, example_index: int, with_labels: bool,
                          first_unique_id: int) -> list[SquadFeature] | None:
        tokens = self.context_tokens(example)
        if tokens is None:
            return None
        tok = self.tokenizer
        query = tok.tokenize(preprocess_text(example.question_text, lower=self.do_lower_case))
        query = query[:self.max_query_length]
        answer = self.answer_pieces(example, tokens) if with_labels else None
        max_tokens_for_doc = self.max_seq_length - len(query) - 3
        windows = doc_windows(len(tokens.pieces), max_tokens_for_doc, self.doc_stride)
        doc_offset = len(query) + 2
        features = []
        for index, (start, length) in enumerate(windows):
            pieces = ["[CLS]", *query, "[SEP]", *tokens.pieces[start:start + length], "[SEP]"]
            n = len(pieces)
            input_ids = np.zeros(self.max_seq_length, np.int32)
            input_ids[:n] = tok.convert_tokens_to_ids(pieces)
            input_mask = np.zeros(self.max_seq_length, np.int32)
            input_mask[:n] = 1
            segment_ids = np.zeros(self.max_seq_length, np.int32)
            segment_ids[doc_offset:n] = 1  # window pieces and the final [SEP]
            p_mask = np.ones(self.max_seq_length, np.int32)
            p_mask[0] = 0  # [CLS]
            p_mask[doc_offset:doc_offset + length] = 0
            feature = SquadFeature(
                unique_id=first_unique_id + index, example_index=example_index,
                qas_id=example.qas_id, doc_span_index=index, tokens=pieces,
                doc_offset=doc_offset, char_start=tokens.char_start[start:start + length],
                char_end=tokens.char_end[start:start + length],
                token_is_max_context=max_context_flags(windows, index),
                input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                p_mask=p_mask)
            if with_labels and answer is not None:
                first, last = answer
                if start <= first and last <= start + length - 1:
                    feature.start_position = first - start + doc_offset
                    feature.end_position = last - start + doc_offset
                    feature.is_impossible = False
            features.append(feature)
        return features


def feature_columns(features: Sequence[SquadFeature], with_labels: bool) -> dict[str, np.ndarray]:
    """Column arrays [N, length] under the original's TFRecord names (§9.4)."""
    def column(values: Iterable) -> np.ndarray:
        return np.asarray(list(values), np.int64).reshape(len(features), -1)

    columns = {
        "unique_ids": column(f.unique_id for f in features),
        "input_ids": column(f.input_ids for f in features),
        "input_mask": column(f.input_mask for f in features),
        "segment_ids": column(f.segment_ids for f in features),
        "p_mask": column(f.p_mask for f in features),
    }
    if with_labels:
        columns["start_positions"] = column(f.start_position for f in features)
        columns["end_positions"] = column(f.end_position for f in features)
        columns["is_impossible"] = column(int(f.is_impossible) for f in features)
    return columns
