"""Up-front checks that pre-training record files fit the flags and the model.

Run before anything is built or written: each file's first record is read with the Python
codec (lengths of `input_ids` / `masked_lm_*`, record kind, the ids it holds), and the JSON
summary that create_pretraining_data writes beside it, when present, gives the vocabulary
it was tokenized with. A mismatch is one `RecordMismatchError` line naming the file, what it
holds and the flag that disagrees — instead of `Can't parse serialized Example` or an
out-of-range lookup deep inside training. Files written before summaries existed (or by the
original tool) are checked from their first record alone.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Sequence

from albert_tf.runtime import paths
from albert_tf.data import features as F
from albert_tf.data.example_codec import decode_example
from albert_tf.data.masking import SIDECAR_SUFFIX, read_sidecar
from albert_tf.data.tfrecord_io import read_records


class RecordMismatchError(ValueError):
    """A record file does not fit the flags or the model (one line: file, values, flag)."""


@dataclasses.dataclass(frozen=True)
class RecordExpectations:
    """What the trainer will parse and look up.

    Attributes:
      max_seq_length, max_predictions_per_seq: the flags of the same names.
      kind: features.STATIC (masked records) or features.DYNAMIC (--dynamic_masking).
      vocab_size: the model's; every token id must be below it.
      vocab_source: how the error names where vocab_size comes from.
      sentence_prediction: run_pretraining's --sentence_prediction (sop, nsp, none; None:
        train the sentence head on whatever labels the records hold).
    """

    max_seq_length: int
    max_predictions_per_seq: int
    kind: str = F.STATIC
    vocab_size: int | None = None
    vocab_source: str = "the model config"
    sentence_prediction: str | None = None


def resolve_files(input_patterns: str | Sequence[str]) -> list[str]:
    """Expands globs (a str with commas, or a list) into a sorted, de-duplicated file list.

    Raises FileNotFoundError naming the first pattern that matches nothing.
    """
    patterns = input_patterns.split(",") if isinstance(input_patterns, str) else list(input_patterns)
    files: list[str] = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matched = paths.glob(pattern)  # gs:// and friends through tf.io.gfile
        if not matched:
            raise FileNotFoundError(f"input pattern {pattern!r} matches no file")
        files.extend(m for m in matched if m not in files)
    if not files:
        raise FileNotFoundError(f"no input files in {input_patterns!r}")
    return files


def check_record_files(files: Iterable[str], expected: RecordExpectations) -> int:
    """Checks every file; returns how many hold at least one record.

    Raises:
      RecordMismatchError: a file's records do not fit (`expected`), a file is not a
        TFRecord file, or no file holds any record.
    """
    files = list(files)
    nonempty = 0
    for path in files:
        summary = _summary(path)
        if summary is not None:
            _check_summary(path, summary, expected)
        first = _first_record(path)
        if first is not None:
            nonempty += 1
            _check_record(path, first, expected)
    if files and not nonempty:
        raise RecordMismatchError(f"--input_file: no records in {', '.join(files[:3])}"
                                  f"{', …' if len(files) > 3 else ''}")
    return nonempty


def _summary(path: str) -> dict[str, Any] | None:
    try:
        return read_sidecar(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RecordMismatchError(f"{path}{SIDECAR_SUFFIX}: not a valid JSON summary ({e}); "
                                  f"remove it or rewrite the records") from None


def _first_record(path: str) -> dict[str, list] | None:
    opener = open
    if "://" in path:  # gs:// and friends through TensorFlow's filesystems
        import tensorflow as tf

        opener = tf.io.gfile.GFile
    try:
        record = next(iter(read_records(path, limit=1, open_fn=opener)), None)
        return None if record is None else decode_example(record)
    except (ValueError, IndexError, KeyError, UnicodeDecodeError) as e:
        raise RecordMismatchError(f"{path}: not a TFRecord file of tf.train.Example records "
                                  f"({e})") from None


def _kind_of(path: str, features: dict[str, list]) -> str:
    """STATIC (masked_lm_* present) or DYNAMIC (token_boundary, no masked_lm_*)."""
    required = ("input_ids", "input_mask", "segment_ids", F.LABEL_FEATURE)
    missing = [name for name in required if name not in features]
    if "masked_lm_ids" in features:
        missing += [name for name in F.MASKED_LM_FEATURES if name not in features]
    elif "token_boundary" not in features:
        missing += list(F.MASKED_LM_FEATURES)
    if missing:
        raise RecordMismatchError(f"{path}: first record lacks {', '.join(missing)}; not a "
                                  f"create_pretraining_data record")
    return F.STATIC if "masked_lm_ids" in features else F.DYNAMIC


def _kind_error(path: str, kind: str, source: str) -> str:
    if kind == F.DYNAMIC:
        return (f"{path}{source}: holds unmasked records (written with "
                f"--dynamic_masking_records); pass --dynamic_masking to train on them")
    return (f"{path}{source}: holds masked records, but --dynamic_masking needs records "
            f"written with --dynamic_masking_records")


_UNITS = {"max_seq_length": "tokens per record (input_ids)",
          "max_predictions_per_seq": "masked-LM slots per record (masked_lm_ids)"}


def _length_error(path: str, flag: str, found: int, value: int, source: str) -> str:
    return (f"{path}{source}: records hold {found} {_UNITS[flag]} but --{flag}={value}; "
            f"pass --{flag}={found} or rewrite the records")


def _check_record(path: str, features: dict[str, list], expected: RecordExpectations) -> None:
    kind = _kind_of(path, features)
    if kind != expected.kind:
        raise RecordMismatchError(_kind_error(path, kind, ""))
    length = len(features["input_ids"])
    if length != expected.max_seq_length:
        raise RecordMismatchError(_length_error(path, "max_seq_length", length,
                                                expected.max_seq_length, ""))
    if kind == F.STATIC:
        slots = len(features["masked_lm_ids"])
        if slots != expected.max_predictions_per_seq:
            raise RecordMismatchError(_length_error(path, "max_predictions_per_seq", slots,
                                                    expected.max_predictions_per_seq, ""))
    if expected.vocab_size is not None:
        for name in ("input_ids", "masked_lm_ids"):
            largest = max(features.get(name) or [0])
            if largest >= expected.vocab_size:
                raise RecordMismatchError(
                    f"{path}: first record's {name} holds token id {largest}, but vocab_size is "
                    f"{expected.vocab_size} in {expected.vocab_source}; the records were "
                    f"written with another vocabulary")


def _check_summary(path: str, summary: dict[str, Any], expected: RecordExpectations) -> None:
    """The fields create_pretraining_data records (older summaries may lack some)."""
    source = f" (per {path}{SIDECAR_SUFFIX})"
    kind = summary.get("record_kind")
    if kind in F.RECORD_KINDS and kind != expected.kind:
        raise RecordMismatchError(_kind_error(path, kind, source))
    length = summary.get("max_seq_length")
    if isinstance(length, int) and length != expected.max_seq_length:
        raise RecordMismatchError(_length_error(path, "max_seq_length", length,
                                                expected.max_seq_length, source))
    slots = summary.get("prediction_slots", summary.get("max_predictions_per_seq"))
    if kind == F.STATIC and isinstance(slots, int) and slots != expected.max_predictions_per_seq:
        raise RecordMismatchError(_length_error(path, "max_predictions_per_seq", slots,
                                                expected.max_predictions_per_seq, source))
    vocab = summary.get("vocab_size")
    if expected.vocab_size is not None and isinstance(vocab, int) and vocab > expected.vocab_size:
        raise RecordMismatchError(
            f"{path}: written with a vocabulary of {vocab} pieces ({path}{SIDECAR_SUFFIX}) but "
            f"vocab_size is {expected.vocab_size} in {expected.vocab_source}; ids >= "
            f"{expected.vocab_size} cannot be looked up. Use the config of the model this "
            f"vocabulary belongs to")
    made_for = summary.get("sentence_prediction")
    if isinstance(made_for, str):
        _check_sentence_task(path, made_for, expected.sentence_prediction)


def _check_sentence_task(path: str, made_for: str, flag: str | None) -> None:
    """Records made for one sentence task train only that task's head (or none): NSP on SOP
    pairs would learn SOP under NSP's name, and "none" records label only the one-sentence
    chunks (Q10), so their head would learn chunk length, not a sentence task."""
    if flag == "none" or flag == made_for or (flag is None and made_for != "none"):
        return
    if flag is None:
        raise RecordMismatchError(
            f"{path}: made for --sentence_prediction=none ({path}{SIDECAR_SUFFIX}): its sentence "
            f"labels mark only one-sentence chunks (Q10); pass --sentence_prediction=none to "
            f"train the masked LM alone, or rewrite the records with sop or nsp")
    raise RecordMismatchError(
        f"{path}: made for --sentence_prediction={made_for} ({path}{SIDECAR_SUFFIX}) but "
        f"--sentence_prediction={flag}; pass --sentence_prediction={made_for} (or none: masked "
        f"LM alone) or rewrite the records with --sentence_prediction={flag}")
