"""RACE feature TFRecords: the original's layout (faithfulness §10.3), cached per split.

`input_ids`, `input_mask`, `segment_ids`: the 4 sequences concatenated (4·S int64);
`label_ids` (1) and `is_real_example` (1). Read back as int32 [4, S] model inputs. The cache
is reused only when its key (tokenizer contents, source bytes, split, levels, lengths,
lower-casing) matches (`albert_tf.finetuning.feature_cache`, the policy of every task).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.records import feature_decoder, write_feature_records
from albert_tf.race.examples import NUM_OPTIONS, RaceSplit
from albert_tf.race.features import RaceFeatures
from albert_tf.tokenization import FullTokenizer

FORMAT_VERSION = "race-features-v1"


def feature_columns(features: RaceFeatures) -> dict[str, tuple[str, np.ndarray]]:
    """The TFRecord columns of the features, in the original's order."""
    count = len(features)
    return {"input_ids": ("int64", features.input_ids.reshape(count, -1)),
            "input_mask": ("int64", features.input_mask.reshape(count, -1)),
            "segment_ids": ("int64", features.segment_ids.reshape(count, -1)),
            "label_ids": ("int64", features.label_ids.reshape(count, 1)),
            "is_real_example": ("int64", np.ones((count, 1), np.int64))}


def write_race_records(path: str, features: RaceFeatures) -> int:
    """Writes the features atomically; returns the record count."""
    return write_feature_records(path, feature_columns(features))


def cache_settings(split: str, data: RaceSplit, levels: tuple[str, ...], max_seq_length: int,
                   max_qa_length: int, do_lower_case: bool, tokenizer: FullTokenizer
                   ) -> dict[str, Any]:
    """The key of a split's features (compared with the cached file's sidecar)."""
    return feature_cache.cache_key(
        FORMAT_VERSION, tokenizer, data.source_digest, split=split, levels=list(levels),
        max_seq_length=max_seq_length, max_qa_length=max_qa_length,
        do_lower_case=do_lower_case, num_examples=len(data.examples))


def cached_race_records(path: str, settings: dict[str, Any], build: Callable[[], RaceFeatures],
                        owned: bool) -> str:
    """`path`, reused when its settings match, else built from `build()`."""
    return feature_cache.cached_features(path, settings,
                                         lambda target: write_race_records(target, build()),
                                         owned)


def race_decoder(max_seq_length: int):
    """serialized Example → (inputs int32 [4, S], {"label_ids", "is_real_example"})."""
    return feature_decoder((NUM_OPTIONS, max_seq_length))
