"""GLUE feature TFRecords: the original's field names, a cache keyed by what made them.

Fields (spec §8.3): `input_ids`, `input_mask`, `segment_ids` (int64 [S]), `label_ids`
(int64 [1], float [1] for STS-B) and `is_real_example` (int64 [1]). The original caches
`<task>_train.tf_record` / `<task>_eval.tf_record` in `cached_dir` and reuses them blindly;
our file name also carries the split, `max_seq_length` and a digest of the tokenizer and the
source TSV, so a changed vocabulary, length or data file never reuses stale features.
Files are written under a temporary name and renamed when complete. Decoding and the
train/eval datasets are `finetuning.records`' (shared with RACE); the writer stays here, over
`InputFeatures` objects.
"""

from __future__ import annotations

import hashlib
import os
from typing import Callable, Sequence

import tensorflow as tf
from absl import logging

from albert_tf.data.tfrecord_io import AtomicTFRecordWriter
from albert_tf.finetuning import records as shared
from albert_tf.finetuning.feature_cache import tokenizer_fingerprint
from albert_tf.glue.features import InputFeatures
from albert_tf.glue.tsv import read_bytes
from albert_tf.tokenization import FullTokenizer

FORMAT_VERSION = "glue-features-v1"


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
    with AtomicTFRecordWriter(path) as writer:
        for item in features:
            writer.write_many([serialize_features(item, is_regression)])


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


def decoder(max_seq_length: int, is_regression: bool) -> Callable:
    """serialized Example → (model inputs int32 [S], {"label_ids", "is_real_example"});
    the label is float32 for STS-B, else int32."""
    return shared.feature_decoder((max_seq_length,),
                                  tf.float32 if is_regression else tf.int64)


def train_dataset_fn(path: str, batch_size: int, max_seq_length: int, is_regression: bool,
                     seed: int | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """The loop's training input: repeat, shuffle(100), batch dropping the remainder (§8.3).

    `batch_size` is global; each input pipeline reads its shard and batches its share.
    """
    return shared.train_dataset_fn(path, batch_size, decoder(max_seq_length, is_regression),
                                   seed)


def eval_dataset(path: str, batch_size: int, max_seq_length: int,
                 is_regression: bool) -> tf.data.Dataset:
    """Eval/predict input: every record once, in order, last batch kept (§8.3)."""
    return shared.eval_dataset(path, batch_size, decoder(max_seq_length, is_regression))
