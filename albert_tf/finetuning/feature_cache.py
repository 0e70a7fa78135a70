"""Reuse a cached feature file only when the settings that made it are the same.

The original builds its TFRecord caches when absent and reuses them blindly (spec §8.1,
§9.1, §10.1): a cache from another sequence length, vocabulary or data file is silently
misused. Here each cache carries a JSON sidecar `<path>.settings.json` (the settings and a
digest of tokenizer and sources, plus the record count), written after the records.

* settings equal → reused (logged);
* settings differ → a cache we own (the default path in output_dir) is rebuilt, a file the
  user named is refused with one line saying what differs;
* no sidecar → a cache we own is rebuilt (an interrupted run); a file the user named is
  reused with a warning, as the original would (e.g. a cache the original wrote).

Example:
    >>> cached_features("out/train.tf_record", {"max_seq_length": 128, ...},
    ...                 build=lambda path: write_feature_records(path, columns), owned=True)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any, Callable, Mapping

import tensorflow as tf
from absl import logging

from albert_tf.data.tfrecord_io import publish
from albert_tf.tokenization import FullTokenizer


class FeatureCacheError(ValueError):
    """A cached feature file does not fit this run (one line: the file and what differs)."""


def settings_path(record_path: str) -> str:
    """The JSON sidecar of a feature file."""
    return record_path + ".settings.json"


def digest(*parts: str | bytes) -> str:
    """A short sha256 hex digest of the parts (separated, so ("ab","c") ≠ ("a","bc"))."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little") + data)
    return hasher.hexdigest()[:16]


def tokenizer_fingerprint(tokenizer: FullTokenizer) -> str:
    """A digest of everything that decides the tokens: the SentencePiece model (or the
    WordPiece vocabulary), the lower-casing setting and the digit-comma rule."""
    hasher = hashlib.sha256()
    if tokenizer.sp_model is not None:
        hasher.update(b"spm\0" + tokenizer.sp_model.serialized_model_proto())
    else:
        hasher.update(b"wordpiece\0")
        for piece, index in sorted(tokenizer.vocab.items(), key=lambda item: item[1]):
            hasher.update(f"{index}\t{piece}\n".encode("utf-8"))
    hasher.update(f"\0{tokenizer.do_lower_case}\0{tokenizer.comma_rule}".encode())
    return hasher.hexdigest()


def read_settings(record_path: str) -> dict[str, Any] | None:
    """The sidecar's settings, or None when there is none (or it is unreadable)."""
    path = settings_path(record_path)
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except (ValueError, OSError):
        logging.warning("%s: unreadable settings sidecar; ignoring it", path)
        return None


def _write_settings(record_path: str, settings: Mapping[str, Any]) -> None:
    path = settings_path(record_path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(dict(settings), f, indent=2, sort_keys=True)
            f.write("\n")
        publish(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def differences(stored: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """`key=stored (now new)` for every setting whose stored value differs."""
    return [f"{key}={stored.get(key)!r} (now {value!r})" for key, value in settings.items()
            if stored.get(key) != value]


def cached_features(path: str, settings: Mapping[str, Any], build: Callable[[str], int],
                    owned: bool) -> str:
    """`path` reused when its settings match, else `build(path)` (→ record count) run.

    Args:
      path: the feature TFRecord file.
      settings: JSON-serialisable values that decide the features' content.
      build: writes the records to the given path (atomically) and returns their count.
      owned: True for our default cache path (rebuilt when stale), False for a path the
        user named (refused when stale, reused without a sidecar).
    Raises:
      FeatureCacheError for a user-named file built with other settings.
    """
    settings = dict(settings)
    if tf.io.gfile.exists(path):
        stored = read_settings(path)
        if stored is None and not owned:
            logging.warning("Reusing %s without a settings record (built elsewhere?); its "
                            "features are assumed to match this run", path)
            return path
        changed = differences(stored, settings) if stored is not None else ["no settings record"]
        if not changed:
            logging.info("Reusing cached features %s (%s records)", path,
                         stored.get("num_records", "?"))
            return path
        if not owned:
            raise FeatureCacheError(f"{path}: cached features were built with "
                                    f"{', '.join(changed)}; delete the file or choose another path")
        logging.info("Rebuilding %s: %s", path, ", ".join(changed))
    count = build(path)
    _write_settings(path, {**settings, "num_records": count})
    logging.info("Wrote %d feature records to %s", count, path)
    return path
