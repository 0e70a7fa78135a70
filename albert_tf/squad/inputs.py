"""tf.data pipelines over the SQuAD feature TFRecords, in the training loop's (features, labels) form.

Record names are the original's (faithfulness §9.4); model inputs use the encoder's names.
Training repeats and shuffles (buffer 100) and drops the remainder, as the original's
input_fn; prediction reads every record once, in order. With `LengthBuckets` (v2 only: v1's
unmasked padding logits are part of its loss and n-best search, Q22) batches are grouped by
length and cut to their bucket, `p_mask` with the ids; the labels index real tokens (or 0).
"""

from __future__ import annotations

from typing import Callable, Mapping

import tensorflow as tf

from albert_tf.finetuning.bucketing import LengthBuckets
from albert_tf.finetuning.records import FEATURE_TO_INPUT  # original record name → model input
from albert_tf.finetuning.records import local_replicas

LABEL_NAMES = ("start_positions", "end_positions", "is_impossible")
SHUFFLE_BUFFER = 100


def record_spec(max_seq_length: int, with_labels: bool) -> dict[str, tf.io.FixedLenFeature]:
    """Parsing spec of a feature record (int64 throughout, as written)."""
    spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
    for name in ("input_ids", "input_mask", "segment_ids", "p_mask"):
        spec[name] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    if with_labels:
        for name in LABEL_NAMES:
            spec[name] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def _parse(max_seq_length: int, with_labels: bool, single: bool = False
           ) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """A batch of serialized records (or one, `single`) → int32 features."""
    spec = record_spec(max_seq_length, with_labels)
    parse_fn = tf.io.parse_single_example if single else tf.io.parse_example

    def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        record = parse_fn(serialized, spec)
        return {k: tf.cast(v, tf.int32) for k, v in record.items()}

    return parse


def model_inputs(record: Mapping[str, tf.Tensor], version_2_with_negative: bool
                 ) -> dict[str, tf.Tensor]:
    """The model's input dict from a parsed record batch (v2 adds `p_mask`)."""
    inputs = {name: record[key] for key, name in FEATURE_TO_INPUT.items()}
    if version_2_with_negative:
        inputs["p_mask"] = record["p_mask"]
    return inputs


def split_training_record(record: Mapping[str, tf.Tensor], version_2_with_negative: bool
                          ) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
    """(model inputs, labels); v2's end logits are conditioned on the gold start, which
    is therefore also a model input."""
    inputs = model_inputs(record, version_2_with_negative)
    if version_2_with_negative:
        inputs["start_positions"] = record["start_positions"]
    labels = {name: record[name] for name in LABEL_NAMES}
    return inputs, labels


def train_dataset_fn(path: str, batch_size: int, max_seq_length: int,
                     version_2_with_negative: bool, seed: int | None = None,
                     buckets: LengthBuckets | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """A loop dataset function: `batch_size` is global; each pipeline batches its share
    (grouped by length with `buckets`)."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = context.get_per_replica_batch_size(batch_size) if context else batch_size
        dataset = tf.data.TFRecordDataset(path)
        if context and context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        dataset = dataset.repeat().shuffle(SHUFFLE_BUFFER, seed=seed)
        if buckets is not None:
            parse = _parse(max_seq_length, with_labels=True, single=True)
            dataset = dataset.map(lambda s: split_training_record(parse(s), version_2_with_negative),
                                  num_parallel_calls=tf.data.AUTOTUNE)
            replicas = local_replicas(context) if context else 1
            return buckets.train_batches(dataset, per_replica, replicas).prefetch(tf.data.AUTOTUNE)
        dataset = dataset.batch(per_replica, drop_remainder=True)
        dataset = dataset.map(_parse(max_seq_length, with_labels=True))
        dataset = dataset.map(lambda r: split_training_record(r, version_2_with_negative))
        return dataset.prefetch(tf.data.AUTOTUNE)

    return dataset_fn


def predict_dataset(path: str, batch_size: int, max_seq_length: int,
                    version_2_with_negative: bool, buckets: LengthBuckets | None = None
                    ) -> tf.data.Dataset:
    """(model inputs, {"unique_ids"}) batches of the prediction records, in file order, the
    last (short) batch kept: the `finetuning.inference.Predictor`'s input. With `buckets`,
    grouped by length (the predictor restores the file order)."""
    parse = _parse(max_seq_length, with_labels=False, single=buckets is not None)

    def split(serialized: tf.Tensor):
        record = parse(serialized)
        return model_inputs(record, version_2_with_negative), {"unique_ids": record["unique_ids"]}

    if buckets is not None:
        dataset = tf.data.TFRecordDataset(path).map(split)
        return buckets.eval_batches(dataset, batch_size).prefetch(tf.data.AUTOTUNE)
    dataset = tf.data.TFRecordDataset(path).batch(batch_size)
    return dataset.map(split).prefetch(tf.data.AUTOTUNE)


def inference_inputs(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor | None]:
    """v2's model inputs to predict: no gold start (the head searches the best starts)."""
    return {**features, "start_positions": None}
