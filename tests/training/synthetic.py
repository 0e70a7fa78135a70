"""Synthetic, learnable pretraining batches for loop tests (no corpus, no files).

Segment A draws tokens from the low half of the vocabulary and segment B from the high
half; label 1 swaps them, so SOP is learnable. Token frequencies are skewed, so the MLM
loss falls quickly too.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert_tf.pretraining.records import to_model_inputs


def make_examples(num_examples: int, vocab_size: int = 100, seq_len: int = 16,
                  num_predictions: int = 4, seed: int = 0,
                  nan_weight_at: int | None = None) -> dict[str, np.ndarray]:
    """Original-format feature arrays (faithfulness §5.8 names), `num_examples` rows.

    `nan_weight_at`: row whose masked_lm_weights become NaN (a forced non-finite loss).
    """
    rng = np.random.default_rng(seed)
    half = seq_len // 2
    low = np.arange(5, vocab_size // 2)
    high = np.arange(vocab_size // 2, vocab_size)
    p_low = 1.0 / np.arange(1, len(low) + 1)
    p_low /= p_low.sum()
    p_high = 1.0 / np.arange(1, len(high) + 1)
    p_high /= p_high.sum()
    ids = np.zeros((num_examples, seq_len), np.int32)
    segments = np.zeros((num_examples, seq_len), np.int32)
    mask = np.ones((num_examples, seq_len), np.int32)
    labels = rng.integers(0, 2, (num_examples, 1)).astype(np.int32)
    positions = np.zeros((num_examples, num_predictions), np.int32)
    masked_ids = np.zeros((num_examples, num_predictions), np.int32)
    weights = np.ones((num_examples, num_predictions), np.float32)
    for i in range(num_examples):
        a = rng.choice(low, half - 1, p=p_low)
        b = rng.choice(high, seq_len - half - 1, p=p_high)
        first, second = (b, a) if labels[i, 0] else (a, b)
        ids[i] = np.concatenate([[2], first, [3], second])
        segments[i, half:] = 1
        length = seq_len - int(rng.integers(0, 3))  # some padding
        mask[i, length:] = 0
        ids[i, length:] = 0
        segments[i, length:] = 0
        n_real = int(rng.integers(1, num_predictions + 1))
        pos = np.sort(rng.choice(np.arange(1, length), n_real, replace=False))
        positions[i, :n_real] = pos
        masked_ids[i, :n_real] = ids[i, pos]
        ids[i, pos] = 4  # [MASK]
        weights[i, n_real:] = 0.0
    if nan_weight_at is not None:
        weights[nan_weight_at, 0] = np.nan
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": positions, "masked_lm_ids": masked_ids,
            "masked_lm_weights": weights, "next_sentence_labels": labels}


def dataset_fn(global_batch: int, num_examples: int = 64, repeat: bool = True, **kwargs):
    """A loop dataset function: fixed examples in order, sharded by input pipeline."""
    examples = make_examples(num_examples, **kwargs)

    def fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        ds = tf.data.Dataset.from_tensor_slices(examples)
        if repeat:
            ds = ds.repeat()
        batch = context.get_per_replica_batch_size(global_batch)
        if context.num_input_pipelines > 1:
            ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)
        return ds.batch(batch, drop_remainder=True).map(to_model_inputs)

    return fn


def write_tfrecords(path: str, examples: dict[str, np.ndarray]) -> str:
    """Writes `examples` as original-format tf.train.Examples (faithfulness §5.8) to `path`."""
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(len(examples["input_ids"])):
            feature = {}
            for name, values in examples.items():
                row = values[i].reshape(-1)
                if values.dtype.kind == "f":
                    feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
                else:
                    feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return path
