"""The feature cache: TFRecords under the original's names, plus the eval feature objects.

Spec §9.1/§9.4: `train_feature_file` (TFRecord with labels), `predict_feature_file`
(TFRecord without) and `predict_feature_left_file` (the eval feature objects that
post-processing needs, pickled). As the original, a cache file is built only when absent
and reused otherwise. Ours are written under a temporary name and renamed when complete,
so an interrupted run leaves no partial cache; a cache built with other settings
(sequence length, stride, ...) is refused with one line instead of silently misused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import tempfile
from typing import Any, Sequence

import numpy as np
from absl import logging

from albert_tf.data.example_codec import encode_examples
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter, publish
from albert_tf.squad.features import SquadFeature, feature_columns

_LEFT_FORMAT = "albert_tf.squad eval features v1"


class FeatureCacheError(ValueError):
    """A cached feature file does not fit this run (one line: file, what differs)."""


def _write_records(path: str, features: Sequence[SquadFeature], with_labels: bool) -> None:
    columns = feature_columns(features, with_labels)
    with AtomicTFRecordWriter(path) as writer:
        for begin in range(0, len(features), 1000):
            writer.write_many(encode_examples(
                {name: ("int64", array[begin:begin + 1000]) for name, array in columns.items()}))


def _write_atomic_bytes(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        publish(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def settings_path(record_path: str) -> str:
    """The JSON sidecar recording the settings a training cache was built with."""
    return record_path + ".settings.json"


def _check_settings(path: str, stored: dict[str, Any] | None, settings: dict[str, Any]) -> None:
    if stored is None:
        return
    differing = [f"{k}={stored.get(k)!r} (now {v!r})" for k, v in settings.items()
                 if k in stored and stored[k] != v]
    if differing:
        raise FeatureCacheError(
            f"{path}: cached features were built with {', '.join(differing)}; delete the "
            f"file or choose another path")


def write_train_features(path: str, features: Sequence[SquadFeature],
                         settings: dict[str, Any]) -> None:
    """Writes the training TFRecord (with labels) and its settings sidecar, atomically."""
    if not features:
        raise FeatureCacheError(f"{path}: no training features to write")
    _write_records(path, features, with_labels=True)
    _write_atomic_bytes(settings_path(path), json.dumps(
        {**settings, "num_features": len(features)}, indent=2).encode("utf-8"))
    logging.info("Wrote %d training features to %s", len(features), path)


def check_train_features(path: str, settings: dict[str, Any]) -> int | None:
    """Checks a reused training cache against `settings`; returns its feature count if known."""
    sidecar = settings_path(path)
    if not os.path.exists(sidecar):
        logging.warning("%s has no settings sidecar; reusing it unchecked", path)
        return None
    with open(sidecar, encoding="utf-8") as f:
        stored = json.load(f)
    _check_settings(path, stored, settings)
    return stored.get("num_features")


def write_predict_features(record_path: str, left_path: str, features: Sequence[SquadFeature],
                           settings: dict[str, Any]) -> None:
    """Writes the prediction TFRecord, then the pickled feature objects (each atomically)."""
    if not features:
        raise FeatureCacheError(f"{record_path}: no prediction features to write")
    _write_records(record_path, features, with_labels=False)
    light = [_without_arrays(f) for f in features]
    payload = {"format": _LEFT_FORMAT, "settings": settings, "features": light}
    _write_atomic_bytes(left_path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    logging.info("Wrote %d prediction features to %s and %s", len(features), record_path, left_path)


def _without_arrays(feature: SquadFeature) -> SquadFeature:
    """The feature minus its input arrays (they live in the TFRecord)."""
    empty = np.zeros(0, np.int32)
    return dataclasses.replace(feature, input_ids=empty, input_mask=empty, segment_ids=empty,
                               p_mask=empty)


def load_predict_features(left_path: str, settings: dict[str, Any]) -> list[SquadFeature]:
    """The cached eval feature objects, checked against this run's `settings`.

    The pickle is our own cache file; only load files this tool wrote.
    """
    with open(left_path, "rb") as f:
        try:
            payload = pickle.load(f)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as e:
            raise FeatureCacheError(f"{left_path}: not a feature file written by run_squad ({e})") from None
    if not isinstance(payload, dict) or payload.get("format") != _LEFT_FORMAT:
        raise FeatureCacheError(f"{left_path}: not a feature file written by this run_squad")
    _check_settings(left_path, payload["settings"], settings)
    return payload["features"]


def check_examples_match(left_path: str, features: Sequence[SquadFeature],
                         qas_ids: Sequence[str]) -> None:
    """Every cached feature must point at the example with its question id."""
    for feature in features:
        if feature.example_index >= len(qas_ids) or qas_ids[feature.example_index] != feature.qas_id:
            raise FeatureCacheError(
                f"{left_path}: cached features do not match the predict file (question "
                f"{feature.qas_id!r}); delete the feature files or choose other paths")
