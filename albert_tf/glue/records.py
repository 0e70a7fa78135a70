"""GLUE feature TFRecords: the original's field names, a cache keyed by what made them.

Fields (spec §8.3): `input_ids`, `input_mask`, `segment_ids` (int64 [S]), `label_ids`
(int64 [1], float [1] for STS-B) and `is_real_example` (int64 [1]). The original caches
`<task>_train.tf_record` / `<task>_eval.tf_record` in `cached_dir` and reuses them blindly;
our file name also carries the split, `max_seq_length` and a digest of the tokenizer and the
source TSV, so a changed vocabulary, length or data file never reuses stale features.
Files are written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Callable, Sequence

import tensorflow as tf
from absl import logging

from albert_tf.glue.features import InputFeatures
from albert_tf.glue.tsv import read_bytes
from albert_tf.tokenization import FullTokenizer

FORMAT_VERSION = "glue-features-v1"
INPUT_FEATURES = ("input_ids", "input_mask", "segment_ids")
# Original feature name → the model's input name (TF-Hub encoder convention).
FEATURE_TO_INPUT = {"input_ids": "input_word_ids", "input_mask": "input_mask",
                    "segment_ids": "input_type_ids"}


def tokenizer_fingerprint(tokenizer: FullTokenizer) -> str:
    """A digest of everything that decides the tokens: the SentencePiece model (or the
    WordPiece vocabulary), the lower-casing setting and the digit-comma rule."""
    digest = hashlib.sha256()
    if tokenizer.sp_model is not None:
        digest.update(b"spm\0" + tokenizer.sp_model.serialized_model_proto())
    else:
        digest.update(b"wordpiece\0")
        for piece, index in sorted(tokenizer.vocab.items(), key=lambda item: item[1]):
            digest.update(f"{index}\t{piece}\n".encode("utf-8"))
    digest.update(f"\0{tokenizer.do_lower_case}\0{tokenizer.comma_rule}".encode())
    return digest.hexdigest()


def cache_path(cached_dir: str, task_name: str, split: str, max_seq_length: int,
               tokenizer: FullTokenizer, source_file: str, use_spm: bool = True,
               do_lower_case: bool = True) -> str:
    """`<cached_dir>/<task>_<split>_<max_seq_length>_<digest>.tf_record`: the digest covers
    the tokenizer, the text preprocessing and the source file's bytes."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT_VERSION}\0{task_name}\0{split}\0{max_seq_length}\0{use_spm}\0"
                  f"{do_lower_case}\0".encode())
    digest.update(tokenizer_fingerprint(tokenizer).encode())
    digest.update(hashlib.sha256(read_bytes(source_file)).digest())
    name = f"{task_name}_{split}_{max_seq_length}_{digest.hexdigest()[:16]}.tf_record"
    return os.path.join(cached_dir, name)


def _int_feature(values: Sequence[int]) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def serialize_features(features: InputFeatures, is_regression: bool) -> bytes:
    """One `tf.train.Example` with the original's field names."""
    fields = {
        "input_ids": _int_feature(features.input_ids),
        "input_mask": _int_feature(features.input_mask),
        "segment_ids": _int_feature(features.segment_ids),
        "label_ids": (tf.train.Feature(float_list=tf.train.FloatList(value=[features.label_id]))
                      if is_regression else _int_feature([features.label_id])),
        "is_real_example": _int_feature([int(features.is_real_example)]),
    }
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def write_records(path: str, features: Sequence[InputFeatures], is_regression: bool) -> None:
    """Writes the TFRecord file atomically: a crash leaves no partial file at `path`."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for item in features:
                writer.write(serialize_features(item, is_regression))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def cached_records(path: str, build: Callable[[], Sequence[InputFeatures]],
                   is_regression: bool) -> str:
    """`path` if it exists (reused, logged), else the records `build()` returns written there."""
    if tf.io.gfile.exists(path):
        logging.info("Reusing cached features %s", path)
        return path
    features = build()
    write_records(path, features, is_regression)
    logging.info("Wrote %d feature records to %s", len(features), path)
    return path


def parse_spec(max_seq_length: int, is_regression: bool) -> dict[str, tf.io.FixedLenFeature]:
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INPUT_FEATURES}
    spec["label_ids"] = tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64)
    spec["is_real_example"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def decoder(max_seq_length: int, is_regression: bool):
    """serialized Example → (model inputs int32, {"label_ids", "is_real_example"})."""
    spec = parse_spec(max_seq_length, is_regression)

    def decode(serialized: tf.Tensor):
        example = tf.io.parse_single_example(serialized, spec)
        inputs = {FEATURE_TO_INPUT[name]: tf.cast(example[name], tf.int32)
                  for name in INPUT_FEATURES}
        label = example["label_ids"]
        labels = {"label_ids": label if is_regression else tf.cast(label, tf.int32),
                  "is_real_example": tf.cast(example["is_real_example"], tf.float32)}
        return inputs, labels

    return decode


def train_dataset_fn(path: str, batch_size: int, max_seq_length: int, is_regression: bool,
                     seed: int | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """The loop's training input: repeat, shuffle(100), batch dropping the remainder (§8.3).

    `batch_size` is global; each input pipeline reads its shard and batches its share.
    """
    decode = decoder(max_seq_length, is_regression)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = tf.data.TFRecordDataset(path)
        if context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        dataset = dataset.repeat().shuffle(100, seed=seed)
        dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.batch(context.get_per_replica_batch_size(batch_size),
                             drop_remainder=True).prefetch(tf.data.AUTOTUNE)

    return dataset_fn


def eval_dataset(path: str, batch_size: int, max_seq_length: int,
                 is_regression: bool) -> tf.data.Dataset:
    """Eval/predict input: every record once, in order, last batch kept (§8.3)."""
    dataset = tf.data.TFRecordDataset(path).map(decoder(max_seq_length, is_regression))
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
