"""The one feature-cache policy of GLUE, SQuAD and RACE: reuse a file only when its key matches.

The original builds its TFRecord caches when absent and reuses them blindly (faithfulness
§8.1, §9.1, §10.1): a cache from another sequence length, vocabulary or data file is
silently misused. Here every cache file has a JSON sidecar `<file>.settings.json`, its *key*
(`cache_key`): a digest of the tokenizer's contents (the SentencePiece model's bytes, not
its file name), a digest of the source data's bytes and every setting that shapes the
features, plus the record count. The sidecar is written after the records (and any companion
file), each under a temporary name renamed when complete.

The rule, for every task:

* key equal → reused (logged);
* our own cache (the default path in output_dir) with another key, or no sidecar (an
  interrupted run) → rebuilt;
* a cache the user named (SQuAD's --train_feature_file / --predict_feature_file /
  --predict_feature_left_file, RACE's --train_file / --eval_file / --predict_file, any file
  in GLUE's --cached_dir) with another key → refused with one line naming the file and what
  differs; without a sidecar (e.g. written by the original) → reused with a warning.

Example:
    >>> key = cache_key("race-features-v1", tokenizer, data_digest, max_seq_length=512)
    >>> cached_features("out/train.tf_record", key, build=write_records, owned=True)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf
from absl import logging

from albert_tf.runtime.atomic_files import atomic_file
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


def file_digest(*paths: str) -> str:
    """A short digest of the files' bytes, in order (any tf.io.gfile path)."""
    contents = []
    for path in paths:
        with tf.io.gfile.GFile(path, "rb") as f:
            contents.append(f.read())
    return digest(*contents)


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


def cache_key(format_version: str, tokenizer: FullTokenizer, source_digest: str,
              **settings: Any) -> dict[str, Any]:
    """The key of a feature file: format, tokenizer contents, data contents, `settings`
    (JSON values: lengths, strides, lower-casing, split, …)."""
    return {"format": format_version, "tokenizer": tokenizer_fingerprint(tokenizer)[:16],
            "sources": source_digest, **settings}


def read_settings(record_path: str) -> dict[str, Any] | None:
    """The sidecar's key, or None when there is none (or it is unreadable)."""
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
    with atomic_file(path, what="feature cache settings") as f:
        json.dump(dict(settings), f, indent=2, sort_keys=True)
        f.write("\n")


def differences(stored: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """`key=stored (now new)` for every setting whose stored value differs."""
    return [f"{key}={stored.get(key)!r} (now {value!r})" for key, value in settings.items()
            if stored.get(key) != value]


def stale_error(path: str, changed: Sequence[str]) -> FeatureCacheError:
    """The one-line refusal of a user-named cache built with other settings."""
    return FeatureCacheError(f"{path}: cached features were built with {', '.join(changed)}; "
                             "delete the file or choose another path")


def cached_features(path: str, settings: Mapping[str, Any], build: Callable[[str], int],
                    owned: bool, companions: Sequence[str] = (),
                    check: Callable[[], list[str]] | None = None) -> str:
    """`path` reused when its key matches, else `build(path)` (→ record count) run.

    Args:
      path: the feature TFRecord file.
      settings: the key (`cache_key`), JSON-serialisable.
      build: writes the records (and the companions) atomically; returns the record count.
      owned: True for our default cache path (rebuilt when stale), False for a path the
        user named (refused when stale, reused without a sidecar).
      companions: other files of the same cache (SQuAD's eval features); when one is
        missing the cache counts as absent.
      check: () → further differences (e.g. a companion's own key), asked before reusing.
    Raises:
      FeatureCacheError for a user-named file built with other settings.
    """
    settings = dict(settings)
    present = tf.io.gfile.exists(path) and all(tf.io.gfile.exists(p) for p in companions)
    if present:
        stored = read_settings(path)
        if stored is None:
            changed = [] if not owned else ["no settings record"]
        else:
            changed = differences(stored, settings)
        if not changed and check is not None:
            changed = check()
        if not changed:
            if stored is None:
                logging.warning("Reusing %s without a settings record (built elsewhere?); its "
                                "features are assumed to match this run", path)
            else:
                logging.info("Reusing cached features %s (%s records)", path,
                             stored.get("num_records", "?"))
            return path
        if not owned:
            raise stale_error(path, changed)
        logging.info("Rebuilding %s: %s", path, ", ".join(changed))
    count = build(path)
    _write_settings(path, {**settings, "num_records": count})
    logging.info("Wrote %d feature records to %s", count, path)
    return path
