"""Segment pairs of a document (faithfulness §5.3–5.5), as token ranges into a TokenizedCorpus.

A pair is (a_start, a_end, b_start, b_end, label) with token offsets into
`corpus.token_ids`: segments are always contiguous runs of a document's text (consecutive
sentences, trimmed at either end), so no token list is ever copied here.
Label: 0 = A precedes B in the text; 1 = swapped (SOP) or random document (NSP, or a
single-sentence chunk in either mode, Q10).

Sentence-prediction tasks (`SENTENCE_TASKS`, the paper's Table 5): "sop" (the original's
default), "nsp" (`--random_next_sentence`) and "none" (no sentence task: the SOP pairs with
every swap undone, so A always precedes B).
"""

from __future__ import annotations

import random
from typing import NamedTuple

import numpy as np

from albert_tf.data.documents import TokenizedCorpus


SENTENCE_TASKS = ("sop", "nsp", "none")


class Pair(NamedTuple):
    a_start: int
    a_end: int
    b_start: int
    b_end: int
    label: int


class PairBuilder:
    """Builds the pairs of one document per call, as the original's
    `create_instances_from_document` (without masking, which runs batched afterwards).

    `keep_order` (task "none") draws the SOP coin but never swaps, so the pairs are the SOP
    pairs of the same seed in text order. `skip_single_sentence_chunks` drops the pairs of
    one-sentence chunks (whose B comes from a random document in every mode, Q10), so that
    every label is the task's own: held-out SOP/NSP evaluation sets. Both consume the random
    stream exactly as without them, so the other pairs stay those of the same seed.
    """

    def __init__(self, corpus: TokenizedCorpus, max_seq_length: int, short_seq_prob: float,
                 random_next_sentence: bool, keep_order: bool = False,
                 skip_single_sentence_chunks: bool = False):
        self.offsets = corpus.sentence_offsets.tolist()
        self.doc_starts = corpus.doc_starts.tolist()
        self.doc_ends = corpus.doc_ends.tolist()
        self.max_num_tokens = max_seq_length - 3  # [CLS], [SEP], [SEP]
        self.short_seq_prob = short_seq_prob
        self.random_next_sentence = random_next_sentence
        self.keep_order = keep_order
        self.skip_single_sentence_chunks = skip_single_sentence_chunks

    def __call__(self, rng: random.Random, doc: int) -> list[Pair]:
        off = self.offsets
        first, last = self.doc_starts[doc], self.doc_ends[doc]
        # One target length per document and pass (§5.3.1).
        target = self.max_num_tokens
        if rng.random() < self.short_seq_prob:
            target = rng.randint(2, self.max_num_tokens)
        pairs: list[Pair] = []
        chunk_start, length, i = first, 0, first
        while i < last:
            length += off[i + 1] - off[i]
            if i == last - 1 or length >= target:
                chunk_size = i + 1 - chunk_start
                a_split = chunk_start + (1 if chunk_size == 1 else rng.randint(1, chunk_size - 1))
                a = (off[chunk_start], off[a_split])
                if chunk_size == 1 or (self.random_next_sentence and rng.random() < 0.5):
                    b = self._random_segment(rng, doc, target - (a[1] - a[0]))
                    label = 1
                    i = a_split - 1  # "put back" the chunk's unused sentences
                elif (not self.random_next_sentence and rng.random() < 0.5
                      and not self.keep_order):
                    a, b = (off[a_split], off[i + 1]), a  # sentence-order swap
                    label = 1
                else:
                    b = (off[a_split], off[i + 1])
                    label = 0
                pair = self._truncate(rng, a, b, label)
                if not (chunk_size == 1 and self.skip_single_sentence_chunks):
                    pairs.append(pair)
                chunk_start, length = i + 1, 0
            i += 1
        return pairs

    def _random_segment(self, rng: random.Random, doc: int, target_b: int) -> tuple[int, int]:
        """Sentences from a random other document (up to 10 draws to avoid this one, §5.4)
        from a random start until `target_b` tokens are reached (at least one sentence)."""
        num_docs = len(self.doc_starts)
        for _ in range(10):
            other = rng.randint(0, num_docs - 1)
            if other != doc:
                break
        first, last = self.doc_starts[other], self.doc_ends[other]
        start = first + rng.randint(0, last - first - 1)
        end, off = start, self.offsets
        while end < last:
            end += 1
            if off[end] - off[start] >= target_b:
                break
        return off[start], off[end]

    def _truncate(self, rng: random.Random, a: tuple[int, int], b: tuple[int, int], label: int) -> Pair:
        """§5.5: trim the longer segment (B on ties) at a random end until the pair fits."""
        a0, a1 = a
        b0, b1 = b
        while (a1 - a0) + (b1 - b0) > self.max_num_tokens:
            if a1 - a0 > b1 - b0:
                if rng.random() < 0.5:
                    a0 += 1
                else:
                    a1 -= 1
            elif rng.random() < 0.5:
                b0 += 1
            else:
                b1 -= 1
        return Pair(a0, a1, b0, b1, label)


def pack_pairs(corpus: TokenizedCorpus, pairs: list[Pair], max_seq_length: int, cls_id: int,
               sep_id: int) -> dict[str, np.ndarray]:
    """`[CLS] A [SEP] B [SEP]` rows padded with 0 (§5.3.6): input_ids, input_mask,
    segment_ids, word_start [P, S] and next_sentence_labels [P, 1]."""
    n = len(pairs)
    ids = np.zeros((n, max_seq_length), np.int64)
    starts = np.zeros((n, max_seq_length), bool)
    segment = np.zeros((n, max_seq_length), np.int64)
    mask = np.zeros((n, max_seq_length), np.int64)
    tokens, flags = corpus.token_ids, corpus.word_starts
    for r, (a0, a1, b0, b1, _) in enumerate(pairs):
        la, lb = a1 - a0, b1 - b0
        row = ids[r]
        row[0] = cls_id
        row[1:1 + la] = tokens[a0:a1]
        row[1 + la] = sep_id
        row[2 + la:2 + la + lb] = tokens[b0:b1]
        row[2 + la + lb] = sep_id
        starts[r, 1:1 + la] = flags[a0:a1]
        starts[r, 2 + la:2 + la + lb] = flags[b0:b1]
        segment[r, 2 + la:3 + la + lb] = 1
        mask[r, :3 + la + lb] = 1
    labels = np.asarray([p.label for p in pairs], np.int64).reshape(n, 1)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segment, "word_start": starts,
            "next_sentence_labels": labels}
