"""GLUE feature TFRecords: the original's field names, cached by the shared policy.

Fields (faithfulness §8.3): `input_ids`, `input_mask`, `segment_ids` (int64 [S]), `label_ids`
(int64 [1], float [1] for STS-B) and `is_real_example` (int64 [1]). Cached as the original
names them, `<task>_train.tf_record` / `<task>_eval.tf_record` (and `<task>_predict.tf_record`)
in `--cached_dir` (default output_dir), reused only when their key — tokenizer contents,
source TSV bytes, task, split, `max_seq_length`, lower-casing — matches
(`albert_tf.finetuning.feature_cache`: files in a `--cached_dir` the user named are refused
when stale, ours in output_dir rebuilt). Writing, decoding and the train/eval datasets are
`finetuning.records`' (shared with RACE and SQuAD); the run template (`finetuning.run`)
trains on them with `decoder`.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.finetuning import feature_cache
from albert_tf.finetuning import records as shared
from albert_tf.finetuning.bucketing import LengthBuckets
from albert_tf.glue.features import InputFeatures
from albert_tf.glue.tsv import read_bytes
from albert_tf.tokenization import FullTokenizer

FORMAT_VERSION = "glue-features-v1"
# Split → the original's cache file suffix (`<task>_train.tf_record`, …).
CACHE_SUFFIX = {"train": "train", "dev": "eval", "test": "predict"}


def cache_path(cached_dir: str, task_name: str, split: str) -> str:
    """`<cached_dir>/<task>_{train,eval,predict}.tf_record`, the original's names."""
    return os.path.join(cached_dir, f"{task_name}_{CACHE_SUFFIX[split]}.tf_record")


def cache_settings(task_name: str, split: str, max_seq_length: int, do_lower_case: bool,
                   tokenizer: FullTokenizer, source_file: str, num_examples: int
                   ) -> dict[str, Any]:
    """The key of a split's features (compared with the cached file's sidecar)."""
    return feature_cache.cache_key(
        FORMAT_VERSION, tokenizer, feature_cache.digest(read_bytes(source_file)),
        task=task_name, split=split, max_seq_length=max_seq_length,
        do_lower_case=do_lower_case, num_examples=num_examples)


def feature_columns(features: Sequence[InputFeatures], is_regression: bool
                    ) -> dict[str, tuple[str, np.ndarray]]:
    """The TFRecord columns of the features, in the original's order."""
    count = len(features)
    labels = [f.label_id for f in features]
    return {"input_ids": ("int64", np.array([f.input_ids for f in features], np.int64)),
            "input_mask": ("int64", np.array([f.input_mask for f in features], np.int64)),
            "segment_ids": ("int64", np.array([f.segment_ids for f in features], np.int64)),
            "label_ids": (("float", np.array(labels, np.float32).reshape(count, 1))
                          if is_regression else
                          ("int64", np.array(labels, np.int64).reshape(count, 1))),
            "is_real_example": ("int64", np.array([int(f.is_real_example) for f in features],
                                                  np.int64).reshape(count, 1))}


def write_records(path: str, features: Sequence[InputFeatures], is_regression: bool) -> int:
    """Writes the TFRecord file atomically (a crash leaves no partial file at `path`);
    returns the record count."""
    return shared.write_feature_records(path, feature_columns(features, is_regression))


def cached_records(path: str, settings: dict[str, Any],
                   build: Callable[[], Sequence[InputFeatures]], is_regression: bool,
                   owned: bool) -> str:
    """`path`, reused when its key matches `settings`, else the records `build()` returns
    written there (see `finetuning.feature_cache` for stale and foreign files)."""
    return feature_cache.cached_features(
        path, settings, lambda target: write_records(target, build(), is_regression), owned)


def decoder(max_seq_length: int, is_regression: bool) -> Callable:
    """serialized Example → (model inputs int32 [S], {"label_ids", "is_real_example"});
    the label is float32 for STS-B, else int32."""
    return shared.feature_decoder((max_seq_length,),
                                  tf.float32 if is_regression else tf.int64)


def eval_dataset(path: str, batch_size: int, max_seq_length: int, is_regression: bool,
                 buckets: LengthBuckets | None = None) -> tf.data.Dataset:
    """Eval/predict input: every record once, in order, last batch kept (§8.3); with
    `buckets`, grouped by length (the predictor restores the order)."""
    return shared.eval_dataset(path, batch_size, decoder(max_seq_length, is_regression),
                               buckets)
