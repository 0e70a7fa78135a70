"""Fine-tuning feature TFRecords: the original's field names, any fixed input shape.

Every fine-tuning task of the original stores `input_ids`, `input_mask`, `segment_ids`
(int64, the task's input shape flattened — [S] for GLUE, 4·S for RACE), `label_ids` and
`is_real_example` (faithfulness §8.3, §10.3). Files are written without TensorFlow (fast, and
atomically: a temporary name renamed when complete); reading gives the model's input names
(`input_word_ids`, `input_mask`, `input_type_ids`) in the task's shape, int32.

Example:
    >>> write_feature_records("train.tf_record", {"input_ids": ("int64", ids), ...})
    >>> decode = feature_decoder((4, 128))
    >>> dataset = eval_dataset("eval.tf_record", 8, decode)
    >>> dataset = eval_dataset("eval.tf_record", 8, decode, LengthBuckets(128))  # bucketed
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.data.example_codec import encode_examples
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter
from albert_tf.finetuning.bucketing import LengthBuckets
from albert_tf.models.encoder import FEATURE_TO_INPUT

INPUT_FEATURES = tuple(FEATURE_TO_INPUT)
_CHUNK = 1000

Columns = Mapping[str, tuple[str, np.ndarray]]


def write_feature_records(path: str, columns: Columns) -> int:
    """Writes one `tf.train.Example` per row of the columns; returns the record count.

    Args:
      path: the TFRecord file; written under a temporary name, renamed when complete.
      columns: feature name → ("int64" | "float", array [N, ...]); trailing axes are
        flattened, so [N, 4, S] is stored as 4·S values per record.
    """
    flat = {name: (dtype, np.asarray(array).reshape(len(array), -1))
            for name, (dtype, array) in columns.items()}
    count = len(next(iter(flat.values()))[1]) if flat else 0
    with AtomicTFRecordWriter(path, what="feature records") as writer:
        for begin in range(0, count, _CHUNK):
            writer.write_many(encode_examples(
                {name: (dtype, array[begin:begin + _CHUNK]) for name, (dtype, array) in flat.items()}))
    return count


def feature_decoder(input_shape: Sequence[int], label_dtype: tf.DType = tf.int64
                    ) -> Callable[[tf.Tensor], tuple[dict, dict]]:
    """serialized Example → (model inputs int32 of `input_shape`, {"label_ids", "is_real_example"}).

    `label_dtype` tf.float32 for a regression label (STS-B); integer labels come out int32.
    """
    shape = [int(d) for d in input_shape]
    size = math.prod(shape)
    spec = {name: tf.io.FixedLenFeature([size], tf.int64) for name in INPUT_FEATURES}
    spec["label_ids"] = tf.io.FixedLenFeature([], label_dtype)
    spec["is_real_example"] = tf.io.FixedLenFeature([], tf.int64)

    def decode(serialized: tf.Tensor):
        example = tf.io.parse_single_example(serialized, spec)
        inputs = {FEATURE_TO_INPUT[name]: tf.reshape(tf.cast(example[name], tf.int32), shape)
                  for name in INPUT_FEATURES}
        label = example["label_ids"]
        labels = {"label_ids": label if label_dtype.is_floating else tf.cast(label, tf.int32),
                  "is_real_example": tf.cast(example["is_real_example"], tf.float32)}
        return inputs, labels

    return decode


def local_replicas(context: tf.distribute.InputContext) -> int:
    """Replicas fed by this input pipeline."""
    return max(1, context.num_replicas_in_sync // max(1, context.num_input_pipelines))


def train_dataset_fn(path: str, batch_size: int, decode: Callable, seed: int | None = None,
                     shuffle_buffer: int = 100, buckets: LengthBuckets | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """The loop's training input, as the original's: repeat, shuffle(100), batch dropping
    the remainder. `batch_size` is global; each input pipeline reads its shard. With
    `buckets`, batches group examples of one bucket length (`LengthBuckets.train_batches`)."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = tf.data.TFRecordDataset(path)
        if context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        dataset = dataset.repeat().shuffle(shuffle_buffer, seed=seed)
        dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        per_replica = context.get_per_replica_batch_size(batch_size)
        if buckets is not None:
            dataset = buckets.train_batches(dataset, per_replica, local_replicas(context))
        else:
            dataset = dataset.batch(per_replica, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE)

    return dataset_fn


def eval_dataset(path: str, batch_size: int, decode: Callable,
                 buckets: LengthBuckets | None = None) -> tf.data.Dataset:
    """Eval/predict input: every record once, in order, the last (short) batch kept; with
    `buckets`, grouped by length and tagged with their order (`LengthBuckets.eval_batches`)."""
    dataset = tf.data.TFRecordDataset(path).map(decode)
    if buckets is not None:
        return buckets.eval_batches(dataset, batch_size).prefetch(tf.data.AUTOTUNE)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
