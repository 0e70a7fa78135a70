"""SQuAD's feature records: the caches (under the policy every task shares,
`finetuning.feature_cache`) and their tf.data pipelines.

Faithfulness §9.1/§9.4: `train_feature_file` (TFRecord with labels), `predict_feature_file`
(TFRecord without) and `predict_feature_left_file` (the eval feature objects that
post-processing needs, pickled). The original builds a cache file only when absent and reuses
it otherwise; here a file is reused only when its key — the SentencePiece model's contents
(not its file name), the JSON file's bytes, and every feature setting — matches: our own
files in output_dir are rebuilt when stale, files the user named are refused. The records go
through the one writer (`finetuning.records.write_feature_records`); the pickle carries the
key too, so a record file and a feature file of different runs are never paired.

Reading back: record names are the original's, model inputs the encoder's. Training and
prediction are the shared pipelines (`finetuning.records.train_dataset_fn`, `eval_dataset`:
repeat, shuffle(100), drop the remainder; every record once, in order), with SQuAD's decoders.
With `LengthBuckets` (v2 only: v1's unmasked padding logits are part of its loss and n-best
search, Q22) batches are grouped by length and cut to their bucket, `p_mask` with the ids;
the labels index real tokens (or 0).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file
from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.feature_cache import FeatureCacheError
from albert_tf.finetuning import records as shared
from albert_tf.finetuning.bucketing import LengthBuckets
from albert_tf.finetuning.records import FEATURE_TO_INPUT, write_feature_records
from albert_tf.squad.features import SquadFeature, feature_columns
from albert_tf.tokenization import FullTokenizer

FORMAT_VERSION = "squad-features-v1"
_LEFT_FORMAT = "albert_tf.squad eval features v2"
LABEL_NAMES = ("start_positions", "end_positions", "is_impossible")

def cache_settings(role: str, source_file: str, tokenizer: FullTokenizer, max_seq_length: int,
                   doc_stride: int, max_query_length: int, do_lower_case: bool,
                   version_2_with_negative: bool) -> dict[str, Any]:
    """The key of the train ("train") or prediction ("predict") features of `source_file`."""
    return feature_cache.cache_key(
        FORMAT_VERSION, tokenizer, feature_cache.file_digest(source_file), role=role,
        max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, do_lower_case=do_lower_case,
        version_2_with_negative=version_2_with_negative)


def write_records(path: str, features: Sequence[SquadFeature], with_labels: bool) -> int:
    """The features' TFRecord (original names, §9.4), written atomically; the record count."""
    if not features:
        raise FeatureCacheError(f"{path}: no features to write")
    columns = feature_columns(features, with_labels)
    return write_feature_records(path, {name: ("int64", array) for name, array in columns.items()})


def cached_train_records(path: str, settings: dict[str, Any],
                         build: Callable[[], Sequence[SquadFeature]], owned: bool) -> str:
    """The training TFRecord at `path`, reused when its key matches, else built."""
    return feature_cache.cached_features(
        path, settings, lambda target: write_records(target, build(), with_labels=True), owned)


def _write_atomic_bytes(path: str, data: bytes) -> None:
    with atomic_file(path, "wb", what="SQuAD evaluation features") as f:
        f.write(data)


def _without_arrays(feature: SquadFeature) -> SquadFeature:
    """The feature minus its input arrays (they live in the TFRecord)."""
    empty = np.zeros(0, np.int32)
    return dataclasses.replace(feature, input_ids=empty, input_mask=empty, segment_ids=empty,
                               p_mask=empty)


def write_left_features(path: str, features: Sequence[SquadFeature],
                        settings: dict[str, Any]) -> None:
    """Pickles the eval feature objects (without their arrays) and their key, atomically."""
    payload = {"format": _LEFT_FORMAT, "settings": dict(settings),
               "features": [_without_arrays(f) for f in features]}
    _write_atomic_bytes(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def load_left_features(path: str) -> tuple[list[SquadFeature], dict[str, Any]]:
    """(eval feature objects, their key) of a file this tool wrote.

    The pickle is our own cache file; only load files this tool wrote.
    """
    with paths.open_file(path, "rb") as f:
        try:
            payload = pickle.load(f)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as e:
            raise FeatureCacheError(f"{path}: not a feature file written by albert-tf "
                                    f"run_squad ({e})") from None
    if not isinstance(payload, dict) or payload.get("format") != _LEFT_FORMAT:
        raise FeatureCacheError(f"{path}: not a feature file written by this version of "
                                "albert-tf run_squad; delete it to rebuild it")
    return payload["features"], payload["settings"]


def check_examples_match(left_path: str, features: Sequence[SquadFeature],
                         qas_ids: Sequence[str]) -> None:
    """Every cached feature must point at the example with its question id."""
    for feature in features:
        if feature.example_index >= len(qas_ids) or qas_ids[feature.example_index] != feature.qas_id:
            raise FeatureCacheError(
                f"{left_path}: cached features do not match the predict file (question "
                f"{feature.qas_id!r}); delete the feature files or choose other paths")


def cached_predict_features(record_path: str, left_path: str, settings: dict[str, Any],
                            build: Callable[[], Sequence[SquadFeature]], owned: bool,
                            qas_ids: Sequence[str]) -> list[SquadFeature]:
    """The prediction TFRecord + feature file pair, reused when both keys match, else
    built (records, then features, then the sidecar); returns the feature objects."""
    features: list[SquadFeature] = []

    def check() -> list[str]:  # the feature file is half of the cache: its key must match
        try:
            loaded, stored = load_left_features(left_path)
        except FeatureCacheError as e:
            if not owned:
                raise
            return [str(e)]
        features[:] = loaded
        return [f"{os.path.basename(left_path)}: {change}"
                for change in feature_cache.differences(stored, settings)]

    def write(target: str) -> int:
        built = list(build())
        count = write_records(target, built, with_labels=False)
        write_left_features(left_path, built, settings)
        features[:] = built
        return count

    feature_cache.cached_features(record_path, settings, write, owned, companions=[left_path],
                                  check=check)
    check_examples_match(left_path, features, qas_ids)
    return features


# ----- reading the records back -----
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
    """One serialized record → int32 features."""
    spec = record_spec(max_seq_length, with_labels)

    def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        record = tf.io.parse_single_example(serialized, spec)
        return {k: tf.cast(v, tf.int32) for k, v in record.items()}

    return parse


def model_inputs(record: Mapping[str, tf.Tensor], version_2_with_negative: bool
                 ) -> dict[str, tf.Tensor]:
    """The model's input dict from a parsed record (v2 adds `p_mask`)."""
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


def train_decoder(max_seq_length: int, version_2_with_negative: bool) -> Callable:
    """serialized training record → (model inputs, labels)."""
    parse = _parse(max_seq_length, with_labels=True)
    return lambda serialized: split_training_record(parse(serialized), version_2_with_negative)


def predict_decoder(max_seq_length: int, version_2_with_negative: bool) -> Callable:
    """serialized prediction record → (model inputs, {"unique_ids"})."""
    parse = _parse(max_seq_length, with_labels=False)

    def decode(serialized: tf.Tensor):
        record = parse(serialized)
        return model_inputs(record, version_2_with_negative), {"unique_ids": record["unique_ids"]}

    return decode


def train_dataset_fn(path: str, batch_size: int, max_seq_length: int,
                     version_2_with_negative: bool, seed: int | None = None,
                     buckets: LengthBuckets | None = None
                     ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
    """The loop's training input (`finetuning.records.train_dataset_fn`): `batch_size` is
    global; each pipeline batches its share (grouped by length with `buckets`)."""
    return shared.train_dataset_fn(path, batch_size,
                                   train_decoder(max_seq_length, version_2_with_negative),
                                   seed, buckets=buckets)


def predict_dataset(path: str, batch_size: int, max_seq_length: int,
                    version_2_with_negative: bool, buckets: LengthBuckets | None = None
                    ) -> tf.data.Dataset:
    """(model inputs, {"unique_ids"}) batches of the prediction records, in file order, the
    last (short) batch kept: the `finetuning.inference.Predictor`'s input. With `buckets`,
    grouped by length (the predictor restores the file order)."""
    return shared.eval_dataset(path, batch_size,
                               predict_decoder(max_seq_length, version_2_with_negative), buckets)


def inference_inputs(features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor | None]:
    """v2's model inputs to predict: no gold start (the head searches the best starts)."""
    return {**features, "start_positions": None}
