"""tf.data pipelines over the SQuAD feature TFRecords, in the training loop's (features, labels) form.

Record names are the original's (spec §9.4); model inputs use the encoder's names.
Training repeats and shuffles (buffer 100) and drops the remainder, as the original's
input_fn; prediction reads every record once, in order.
"""

from __future__ import annotations

from typing import Callable, Mapping

import tensorflow as tf

from albert_tf.finetuning.records import FEATURE_TO_INPUT  # original record name → model input

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


def _parse(max_seq_length: int, with_labels: bool) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    spec = record_spec(max_seq_length, with_labels)

    def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        record = tf.io.parse_example(serialized, spec)
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
                     version_2_with_negative: bool, seed: int | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """A loop dataset function: `batch_size` is global; each pipeline batches its share."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = context.get_per_replica_batch_size(batch_size) if context else batch_size
        dataset = tf.data.TFRecordDataset(path)
        if context and context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        dataset = dataset.repeat().shuffle(SHUFFLE_BUFFER, seed=seed)
        dataset = dataset.batch(per_replica, drop_remainder=True)
        dataset = dataset.map(_parse(max_seq_length, with_labels=True))
        dataset = dataset.map(lambda r: split_training_record(r, version_2_with_negative))
        return dataset.prefetch(tf.data.AUTOTUNE)

    return dataset_fn


def predict_dataset(path: str, batch_size: int, max_seq_length: int,
                    version_2_with_negative: bool) -> tf.data.Dataset:
    """(model inputs, {"unique_ids"}) batches of the prediction records, in file order, the
    last (short) batch kept: the `finetuning.inference.Predictor`'s input."""
    parse = _parse(max_seq_length, with_labels=False)

    def split(serialized: tf.Tensor):
        record = parse(serialized)
        return model_inputs(record, version_2_with_negative), {"unique_ids": record["unique_ids"]}

    dataset = tf.data.TFRecordDataset(path).batch(batch_size)
    return dataset.map(split).prefetch(tf.data.AUTOTUNE)


def inference_inputs(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor | None]:
    """v2's model inputs to predict: no gold start (the head searches the best starts)."""
    return {**features, "start_positions": None}
