"""In-graph n-gram masking for dynamic masking in tf.data (faithfulness §5.6).

A TF transcription of `albert_tf.data.masking.mask_batch`, step for step (see that module's
docstring for the algorithm). The random streams are TF stateless ones, so the masks differ
from the numpy path's for the same seed; tests/data/test_masking.py checks that the two paths
agree in distribution (n-gram lengths, budget, 80/10/10). do_permutation (Q13) is not offered
here: the trainer reads M predictions, and permutation records need 2M.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.data.masking import MaskingOptions


def _budget(lengths: tf.Tensor, options: MaskingOptions) -> tf.Tensor:
    """min(M, max(1, round_half_even(len · p))) computed in float64 as Python does (§5.6.3)."""
    if options.masked_lm_prob == 0:
        return tf.zeros_like(lengths)
    wanted = tf.round(tf.cast(lengths, tf.float64) * options.masked_lm_prob)
    wanted = tf.cast(tf.maximum(wanted, 1.0), lengths.dtype)
    return tf.minimum(wanted, options.max_predictions_per_seq)


def _candidate_groups(candidate: tf.Tensor, word_start: tf.Tensor, whole_word: bool):
    """Group of each candidate token, group offsets [B, S+1] and group counts (§5.6.1)."""
    cand = tf.cast(candidate, tf.int32)
    if whole_word:
        first = candidate & tf.equal(tf.cumsum(cand, axis=1), 1)
        starts = candidate & (word_start | first)
    else:
        starts = candidate
    starts_i = tf.cast(starts, tf.int32)
    group_of = tf.where(candidate, tf.cumsum(starts_i, axis=1) - 1, -1)
    batch, seq = tf.shape(candidate)[0], tf.shape(candidate)[1]
    segment = tf.range(batch)[:, None] * (seq + 1) + group_of + 1
    # Non-candidates add 0 to segment 0, so column 0 of each row stays 0.
    sizes = tf.math.unsorted_segment_sum(cand, tf.where(candidate, segment, 0), batch * (seq + 1))
    sizes = tf.reshape(sizes, [batch, seq + 1])
    return group_of, tf.cumsum(sizes, axis=1), tf.reduce_sum(starts_i, axis=1)


def _select_spans(seed: tf.Tensor, offsets: tf.Tensor, num_groups: tf.Tensor, budget: tf.Tensor,
                  seq: tf.Tensor, options: MaskingOptions) -> tf.Tensor:
    """Greedy n-gram span selection, all rows in lock-step; returns [B, S] selected groups."""
    batch = tf.shape(offsets)[0]
    ngram = options.ngram
    order_seed, draw_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    keys = tf.random.stateless_uniform([batch, seq], order_seed)
    keys = tf.where(tf.range(seq)[None, :] >= num_groups[:, None], 2.0, keys)
    order = tf.argsort(keys, axis=1, stable=True)
    logits = tf.math.log(tf.constant(options.ngram_probabilities(), tf.float32))[None, :]
    draws = tf.reshape(tf.random.stateless_categorical(logits, batch * seq, draw_seed, tf.int32),
                       [batch, seq]) + 1
    spans = tf.range(1, ngram + 1)[None, :]

    def cond(k, count, taken):
        return (k < seq) & tf.reduce_any((k < num_groups) & (count < budget))

    def body(k, count, taken):
        active = (k < num_groups) & (count < budget)
        start = order[:, k][:, None]
        ends = tf.minimum(start + spans, num_groups[:, None])  # span shrinks at the end (Q8)
        length = (tf.gather(offsets, ends, batch_dims=1)
                  - tf.gather(offsets, start, batch_dims=1))
        fits = (spans <= draws[:, k][:, None]) & (count[:, None] + length <= budget[:, None])
        longest = ngram - tf.argmax(tf.cast(tf.reverse(fits, [1]), tf.int32), axis=1, output_type=tf.int32)
        n = tf.where(tf.reduce_any(fits, axis=1), longest, 0)
        cols = tf.minimum(start + spans - 1, seq - 1)
        in_span = (spans <= n[:, None]) & (start + spans - 1 < num_groups[:, None])
        overlap = tf.reduce_any((tf.gather(taken, cols, batch_dims=1) > 0) & in_span, axis=1)
        accept = active & (n > 0) & ~overlap
        mark = tf.cast(in_span & accept[:, None], tf.int32)
        rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(cols))
        # max-scatter: duplicate (clipped) columns carrying 0 never clear a taken group.
        taken = tf.tensor_scatter_nd_max(taken, tf.stack([rows, cols], axis=-1), mark)
        gained = tf.gather(length, tf.maximum(n - 1, 0)[:, None], batch_dims=1)[:, 0]
        return k + 1, count + tf.where(accept, gained, 0), taken

    _, _, taken = tf.while_loop(
        cond, body, (tf.constant(0), tf.zeros([batch], tf.int32), tf.zeros([batch, seq], tf.int32)))
    return taken > 0


def mask_batch_tf(batch: dict[str, tf.Tensor], options: MaskingOptions, seed: tf.Tensor) -> dict[str, tf.Tensor]:
    """Masks a batch of unmasked (dynamic) records in the graph.

    Args:
      batch: int32 input_ids, input_mask, segment_ids, token_boundary [B, S] and
        next_sentence_labels [B, 1] (dynamic record features, parsed and batched).
      options: MaskingOptions (vocab_size, ids, M, probabilities).
      seed: int [2] stateless seed; the masks are a function of it.
    Returns:
      `batch` with masked input_ids and int32 masked_lm_positions, masked_lm_ids and float32
      masked_lm_weights [B, M].
    """
    if options.do_permutation:
        raise ValueError("do_permutation is not supported with dynamic masking (faithfulness Q13)")
    ids = batch["input_ids"]
    shape = tf.shape(ids)
    batch_size, seq = shape[0], shape[1]
    real = batch["input_mask"] > 0
    special = tf.equal(ids, options.cls_id) | tf.equal(ids, options.sep_id)
    candidate = real & ~special
    word_start = batch["token_boundary"] > 0
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)

    group_of, offsets, num_groups = _candidate_groups(candidate, word_start, options.do_whole_word_mask)
    budget = _budget(tf.reduce_sum(tf.cast(real, tf.int32), axis=1), options)
    chosen = _select_spans(seeds[0], offsets, num_groups, budget, seq, options)
    masked = candidate & tf.gather(chosen, tf.maximum(group_of, 0), batch_dims=1)

    # 80% [MASK], 10% unchanged, 10% random id, per token (§5.6.6d).
    u = tf.random.stateless_uniform([batch_size, seq], seeds[1])
    random_ids = tf.random.stateless_uniform([batch_size, seq], seeds[2], minval=0,
                                             maxval=options.vocab_size, dtype=tf.int32)
    output = tf.where(masked & (u < 0.8), options.mask_id, ids)
    output = tf.where(masked & (u >= 0.9), random_ids, output)

    width = options.max_predictions_per_seq
    keys = tf.sort(tf.where(masked, tf.range(seq)[None, :], seq), axis=1)
    keys = tf.concat([keys, tf.fill([batch_size, width], seq)], axis=1)[:, :width]
    valid = keys < seq
    positions = tf.where(valid, keys, 0)
    result = dict(batch)
    result.update({
        "input_ids": output,
        "masked_lm_positions": positions,
        "masked_lm_ids": tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0),
        "masked_lm_weights": tf.cast(valid, tf.float32),
    })
    return result
