"""Length-bucketed batches: each batch is padded to the shortest of a few lengths that fits
its examples, not to `max_seq_length` (`--bucket_by_length`).

Fine-tuning features are stored padded to `max_seq_length` (faithfulness §8.3, §9.4, §10.3);
real text is mostly much shorter (MRPC pairs: ≈ 53 of 128 positions). Examples are grouped
by bucket — the smallest multiple of `step` (16) that holds the example's last real token,
`max_seq_length` for the longest — and every `[..., S]` feature of a batch is cut to its
bucket's length. Padding never changes the real positions' outputs (the −10000 attention
mask gives padded keys exactly zero weight), so eval and predict results equal the padded
ones within float round-off.

* Training (`train_batches`): after the shuffle, `group_by_window` fills one window per
  bucket and emits whichever fills first, so buckets come in data order (random, no
  short-first bias). A window holds the batches of all local replicas of one step, so the
  replicas of a step share a length. The data order differs from the original's (which
  batches the shuffled stream as it comes); `--nobucket_by_length` restores it exactly.
* Eval/predict (`eval_batches`): every example once, grouped the same way (the last,
  partial window of each bucket kept); each example carries its position in the file
  under `ORDER_KEY`, and `inference.Predictor` puts the results back in file order.
* RACE's [4, S] examples are bucketed by the longest of their four options; SQuAD v2's
  `p_mask` is cut with the ids. The sequence axis stays open (`None`), so the training
  loop and the predictor trace once for every bucket; under XLA each bucket length
  compiles once (at most `len(lengths)` compilations).

Example:
    >>> buckets = LengthBuckets(128)
    >>> buckets.lengths
    (16, 32, 48, 64, 80, 96, 112, 128)
    >>> dataset = buckets.eval_batches(examples, batch_size=8)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import tensorflow as tf

from albert_tf.training import distribute

DEFAULT_STEP = 16
# Passthrough key of eval/predict batches: the example's position in its file.
ORDER_KEY = "_bucketing_example_order"


def real_length(features: Mapping[str, tf.Tensor]) -> tf.Tensor:
    """Position after the last real token of one example (`input_mask` [S] or [C, S]), int32."""
    mask = tf.cast(features["input_mask"], tf.int32)
    positions = tf.range(1, tf.shape(mask)[-1] + 1, dtype=tf.int32)
    return tf.reduce_max(tf.concat([tf.reshape(mask * positions, [-1]), [0]], axis=0))


def trim(features: Mapping[str, tf.Tensor], length: tf.Tensor, max_seq_length: int
         ) -> dict[str, tf.Tensor]:
    """Every feature whose last axis is the sequence (`max_seq_length` long) cut to `length`."""
    def cut(x: tf.Tensor) -> tf.Tensor:
        if x.shape.rank and x.shape[-1] == max_seq_length:
            return x[..., :length]
        return x
    return {name: cut(value) for name, value in features.items()}


@dataclasses.dataclass(frozen=True)
class LengthBuckets:
    """The padded lengths a batch may have: multiples of `step` from the first that is
    ≥ `min_length`, then `max_seq_length`.

    Args:
      max_seq_length: the records' length (the longest bucket).
      step: bucket spacing.
      min_length: the shortest allowed bucket (SQuAD v2's top-k needs ≥ start_n_top and
        end_n_top positions).
    """

    max_seq_length: int
    step: int = DEFAULT_STEP
    min_length: int = 1

    def __post_init__(self):
        if self.max_seq_length < 1 or self.step < 1:
            raise ValueError(f"max_seq_length and step must be >= 1, got {self.max_seq_length} "
                             f"and {self.step}")
        if self.min_length > self.max_seq_length:
            raise ValueError(f"min_length {self.min_length} exceeds max_seq_length "
                             f"{self.max_seq_length}")

    @property
    def lengths(self) -> tuple[int, ...]:
        """The bucket lengths, ascending; the last is max_seq_length."""
        first = max(self.step, -(-self.min_length // self.step) * self.step)
        return tuple(range(first, self.max_seq_length, self.step)) + (self.max_seq_length,)

    def bucket_index(self, length: tf.Tensor) -> tf.Tensor:
        """Index (int64) of the shortest bucket holding `length` positions."""
        bounds = tf.constant(self.lengths[:-1], tf.int32)
        return tf.cast(tf.reduce_sum(tf.cast(bounds < length, tf.int32)), tf.int64)

    def _trim_to_bucket(self, features: Mapping[str, tf.Tensor]) -> tuple[dict, tf.Tensor]:
        index = self.bucket_index(real_length(features))
        length = tf.gather(tf.constant(self.lengths, tf.int32), index)
        return trim(features, length, self.max_seq_length), index

    def train_batches(self, examples: tf.data.Dataset, per_replica_batch: int,
                      local_replicas: int = 1) -> tf.data.Dataset:
        """Batches of `per_replica_batch` (remainder dropped) from a repeated, shuffled
        dataset of single `(features, labels)`; the `local_replicas` consecutive batches of
        one step share a bucket."""
        group = per_replica_batch * local_replicas

        def key_and_trim(features, labels):
            trimmed, index = self._trim_to_bucket(features)
            return index, trimmed, labels

        dataset = examples.map(key_and_trim, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.group_by_window(
            key_func=lambda index, features, labels: index,
            reduce_func=lambda _, window: window.batch(group, drop_remainder=True),
            window_size=group)
        dataset = dataset.map(lambda index, features, labels: (features, labels))
        if local_replicas > 1:
            dataset = dataset.rebatch(per_replica_batch, drop_remainder=True)
        return dataset

    def eval_batches(self, examples: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        """Every example of a finite dataset of single `(features, passthrough dict)` once,
        in batches of at most `batch_size` of one bucket; `ORDER_KEY` gives each example's
        position so that `inference.Predictor` restores the file order."""

        def key_and_trim(order, example):
            features, passthrough = example
            trimmed, index = self._trim_to_bucket(features)
            return index, trimmed, {**passthrough, ORDER_KEY: order}

        dataset = examples.enumerate().map(key_and_trim, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.group_by_window(
            key_func=lambda index, features, passthrough: index,
            reduce_func=lambda _, window: window.batch(batch_size),
            window_size=batch_size)
        return dataset.map(lambda index, features, passthrough: (features, passthrough))


def restore_order(results: dict[str, Any]) -> dict[str, Any]:
    """Predictor results (arrays [N, …]) sorted back by `ORDER_KEY`, which is dropped."""
    if ORDER_KEY not in results:
        return results
    order = results.pop(ORDER_KEY).argsort(kind="stable")
    return {key: value[order] for key, value in results.items()}


def uses_static_shapes(strategy: tf.distribute.Strategy) -> bool:
    """True on TPUs, where every batch must have one compiled shape."""
    return distribute.is_tpu(strategy)
