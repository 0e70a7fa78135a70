"""N-gram masking of pre-training instances (faithfulness §5.6), vectorised over a batch with numpy.

This is the one definition of the masking algorithm. `create_pretraining_data` calls
`mask_batch` on blocks of instances; `albert_tf.data.masking_tf.mask_batch_tf` runs the same
steps with TF ops inside tf.data (dynamic masking), line for line, and a test checks that the
two produce the same statistics.

The original masks one instance at a time in Python:
  1. candidate groups: every token but [CLS]/[SEP]; with whole-word masking a non-word-start
     token joins the previous group (also across [SEP], Q32);
  2. budget = min(M, max(1, round(len(tokens) · masked_lm_prob))) (banker's rounding);
  3. visit group starts in a random order; at each draw n ~ p(n) ∝ 1/n (or reversed); the span
     is groups[idx:idx+n], shrinking near the end (Q8); fall back to n−1, …, 1 while the span
     would overflow the budget; skip it if it overlaps covered tokens; stop at the budget;
  4. each covered token: 80% [MASK], 10% kept, 10% a uniformly random vocabulary id (Q9);
  5. optional do_permutation (Q13): select as many more tokens the same way and permute them.
Here step 3 runs for all rows of a batch in lock-step: iteration k handles the k-th start of
every row's own random order. Each row sees exactly the per-instance procedure; only the
random stream differs from the original's (which is unseeded anyway, Q6). Spans are unions of
whole groups, so coverage is tracked per group.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

import numpy as np

from albert_tf.runtime import paths

SIDECAR_SUFFIX = ".json"


@dataclasses.dataclass(frozen=True)
class MaskingOptions:
    """Masking hyperparameters (the create_pretraining_data flags of §5.1) and vocabulary ids.

    The ids default to the released 30k-clean SentencePiece model (§7.4).

    Example:
        >>> options = MaskingOptions(vocab_size=1000, max_predictions_per_seq=20)
        >>> options.ngram_probabilities()  # ngram=3, favor_shorter_ngram=True
        array([0.545..., 0.272..., 0.181...])
    """

    vocab_size: int = 30000
    mask_id: int = 4
    cls_id: int = 2
    sep_id: int = 3
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    ngram: int = 3
    favor_shorter_ngram: bool = True
    do_whole_word_mask: bool = True
    do_permutation: bool = False

    def __post_init__(self):
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        if self.max_predictions_per_seq < 0:
            raise ValueError(f"max_predictions_per_seq must be >= 0, got {self.max_predictions_per_seq}")
        if self.vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {self.vocab_size}")

    @property
    def num_predictions(self) -> int:
        """Prediction slots per record: M, doubled by do_permutation (§5.8, Q13)."""
        return self.max_predictions_per_seq * (2 if self.do_permutation else 1)

    def ngram_probabilities(self) -> np.ndarray:
        """p(n) for n = 1..ngram: ∝ 1/n, reversed when favor_shorter_ngram is False (§5.6.4)."""
        p = 1.0 / np.arange(1, self.ngram + 1)
        p /= p.sum()
        return p if self.favor_shorter_ngram else p[::-1].copy()

    def replace(self, **changes: Any) -> "MaskingOptions":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "MaskingOptions":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def read_sidecar(record_file: str) -> dict[str, Any] | None:
    """The JSON summary create_pretraining_data writes beside `record_file`, if any."""
    path = record_file + SIDECAR_SUFFIX
    if not paths.exists(path):  # local, or gs:// and friends through tf.io.gfile
        return None
    return json.loads(paths.read_text(path))


def prediction_budget(lengths: np.ndarray, options: MaskingOptions) -> np.ndarray:
    """num_to_predict per row (§5.6.3); np.rint rounds half to even like Python 3's round."""
    if options.masked_lm_prob == 0:
        return np.zeros_like(lengths)
    wanted = np.maximum(1, np.rint(lengths.astype(np.float64) * options.masked_lm_prob))
    return np.minimum(options.max_predictions_per_seq, wanted).astype(np.int64)


def token_boundary(input_ids: np.ndarray, input_mask: np.ndarray, word_start: np.ndarray,
                   options: MaskingOptions) -> np.ndarray:
    """The `token_boundary` feature (§5.6.1): 1 on [CLS]/[SEP] and on word-start tokens.

    (A token is flagged when it starts a new candidate group *and* is a word start; with or
    without whole-word grouping that is exactly "is a word start".)
    """
    ids = np.asarray(input_ids)
    special = (ids == options.cls_id) | (ids == options.sep_id)
    real = np.asarray(input_mask).astype(bool)
    return (real & (special | np.asarray(word_start).astype(bool))).astype(np.int64)


def candidate_groups(candidate: np.ndarray, word_start: np.ndarray, whole_word: bool):
    """Group index of each candidate token, group offsets and group counts (§5.6.1).

    Returns:
      group_of: [B, S] group index of each candidate token (−1 elsewhere).
      offsets: [B, S + 1] offsets[b, g] = number of candidate tokens in groups < g.
      num_groups: [B].
    """
    if whole_word:
        first = candidate & (np.cumsum(candidate, axis=1) == 1)
        starts = candidate & (word_start | first)
    else:
        starts = candidate
    group_of = np.where(candidate, np.cumsum(starts, axis=1) - 1, -1)
    batch, seq = candidate.shape
    sizes = np.zeros((batch, seq + 1), np.int64)
    rows = np.broadcast_to(np.arange(batch)[:, None], candidate.shape)
    np.add.at(sizes, (rows[candidate], group_of[candidate] + 1), 1)
    return group_of, np.cumsum(sizes, axis=1), starts.sum(axis=1)


def _random_order(rng: np.random.Generator, num_groups: np.ndarray, width: int) -> np.ndarray:
    """Each row: a uniform random permutation of its groups 0..G_b−1, then padding."""
    keys = rng.random((num_groups.shape[0], width))
    keys[np.arange(width)[None, :] >= num_groups[:, None]] = 2.0
    return np.argsort(keys, axis=1, kind="stable")


def select_spans(rng: np.random.Generator, offsets: np.ndarray, num_groups: np.ndarray,
                 budget: np.ndarray, covered: np.ndarray, options: MaskingOptions) -> np.ndarray:
    """Greedy n-gram span selection (§5.6.5–6), all rows in lock-step.

    Args:
      offsets, num_groups: from `candidate_groups`.
      budget: [B] tokens to select per row.
      covered: [B, S] bool, groups already taken (not modified).
    Returns:
      [B, S] bool: groups selected by this call.
    """
    batch, width = covered.shape
    ngram = options.ngram
    order = _random_order(rng, num_groups, width)
    draws = rng.choice(np.arange(1, ngram + 1), size=(batch, width), p=options.ngram_probabilities())
    taken = covered.copy()
    selected = np.zeros_like(covered)
    count = np.zeros(batch, np.int64)
    rows = np.arange(batch)[:, None]
    spans = np.arange(1, ngram + 1)[None, :]  # candidate n-gram lengths j = 1..ngram
    for k in range(int(num_groups.max(initial=0))):
        active = (k < num_groups) & (count < budget)
        if not active.any():
            break
        start = order[:, k]
        ends = np.minimum(start[:, None] + spans, num_groups[:, None])  # span shrinks at the end (Q8)
        length = offsets[rows, ends] - offsets[rows, start[:, None]]  # tokens in span j
        fits = (spans <= draws[:, k:k + 1]) & (count[:, None] + length <= budget[:, None])
        n = np.where(fits.any(axis=1), ngram - np.argmax(fits[:, ::-1], axis=1), 0)  # longest fit
        cols = np.minimum(start[:, None] + spans - 1, width - 1)
        in_span = (spans <= n[:, None]) & (start[:, None] + spans - 1 < num_groups[:, None])
        overlap = (taken[rows, cols] & in_span).any(axis=1)
        accept = active & (n > 0) & ~overlap
        mark = in_span & accept[:, None]
        taken[rows, cols] |= mark
        selected[rows, cols] |= mark
        count += np.where(accept, length[np.arange(batch), np.maximum(n - 1, 0)], 0)
    return selected


def mask_batch(rng: np.random.Generator, input_ids: np.ndarray, input_mask: np.ndarray,
               word_start: np.ndarray, options: MaskingOptions) -> dict[str, np.ndarray]:
    """Masks a batch of unmasked instances `[CLS] A [SEP] B [SEP]` (padded with 0).

    Args:
      rng: numpy Generator (seeded by the caller: the output is a function of it, Q6 fixed).
      input_ids: [B, S] int, unmasked ids.
      input_mask: [B, S] 1 on real tokens.
      word_start: [B, S] bool, §5.7 word-start flags (values on [CLS]/[SEP]/padding ignored).
      options: MaskingOptions.
    Returns:
      input_ids (masked), token_boundary [B, S] int64; masked_lm_positions, masked_lm_ids
      [B, P] int64 and masked_lm_weights [B, P] float32 with P = options.num_predictions.
    """
    ids = np.asarray(input_ids, np.int64)
    batch, seq = ids.shape
    real = np.asarray(input_mask).astype(bool)
    special = (ids == options.cls_id) | (ids == options.sep_id)
    candidate = real & ~special
    word_start = np.asarray(word_start).astype(bool)
    boundary = token_boundary(ids, real, word_start, options)

    group_of, offsets, num_groups = candidate_groups(candidate, word_start, options.do_whole_word_mask)
    budget = prediction_budget(real.sum(axis=1), options)
    nothing = np.zeros((batch, seq), bool)
    chosen = select_spans(rng, offsets, num_groups, budget, nothing, options)
    rows = np.arange(batch)[:, None]
    masked = candidate & chosen[rows, np.maximum(group_of, 0)]

    # 80% [MASK], 10% unchanged, 10% random id — decided per token (§5.6.6d).
    u = rng.random((batch, seq))
    random_ids = rng.integers(0, options.vocab_size, (batch, seq))
    output = np.where(masked & (u < 0.8), options.mask_id, ids)
    output = np.where(masked & (u >= 0.9), random_ids, output)
    predicted = masked

    if options.do_permutation:
        permuted = select_spans(rng, offsets, num_groups, budget, chosen, options)
        permuted = candidate & permuted[rows, np.maximum(group_of, 0)]
        output = _permute_tokens(rng, output, permuted)
        predicted = masked | permuted

    positions, valid = _sorted_positions(predicted, options.num_predictions)
    labels = np.where(valid, np.take_along_axis(ids, positions, axis=1), 0)
    return {
        "input_ids": output,
        "token_boundary": boundary,
        "masked_lm_positions": positions,
        "masked_lm_ids": labels,
        "masked_lm_weights": valid.astype(np.float32),
    }


def _permute_tokens(rng: np.random.Generator, tokens: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Shuffles the tokens at the `chosen` positions of each row among themselves (§5.6.8)."""
    batch, seq = tokens.shape
    positions = np.arange(seq)[None, :]
    in_order = np.sort(np.where(chosen, positions, seq), axis=1)
    keys = np.where(chosen, rng.random((batch, seq)), 2.0)
    shuffled = np.take_along_axis(np.broadcast_to(positions, (batch, seq)), np.argsort(keys, axis=1), axis=1)
    valid = in_order < seq
    rows = np.broadcast_to(np.arange(batch)[:, None], (batch, seq))
    out = tokens.copy()
    out[rows[valid], in_order[valid]] = tokens[rows[valid], shuffled[valid]]
    return out


def _sorted_positions(chosen: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Ascending chosen positions per row, padded with 0 to `width`, and their validity."""
    batch, seq = chosen.shape
    keys = np.sort(np.where(chosen, np.arange(seq)[None, :], seq), axis=1)
    if width > seq:
        keys = np.concatenate([keys, np.full((batch, width - seq), seq)], axis=1)
    keys = keys[:, :width]
    valid = keys < seq
    return np.where(valid, keys, 0), valid
