"""The calibration input of a static int8 export (`--int8_calibration_file`), read and checked
before anything is written.

Two formats, told apart by their content:
  * a TFRecord file of tf.train.Examples with `input_ids`, `input_mask` and `segment_ids` (the
    records our data scripts write: run_classifier's, run_squad's, run_race's train files);
  * UTF-8 text, one sequence a line, a pair tab-separated, tokenized with the export's
    SentencePiece model as the fine-tuning scripts do (`[CLS] a [SEP] b [SEP]`, pieces of the
    pair's second text with input_type_ids 1).

Each sequence becomes one sample: `{input_word_ids, input_mask, input_type_ids}` int32
[1, length] (text: its own length, up to `max_seq_length`; a record: as written). A file that
is missing, empty, of neither format, or whose ids fall outside the vocabulary (tokenized for
another model) raises `CalibrationError`: one line naming the file, exit 1 in the tools.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from albert_tf.models.encoder import INPUT_NAMES

Sample = dict[str, np.ndarray]
RECORD_FEATURES = ("input_ids", "input_mask", "segment_ids")  # → INPUT_NAMES, in order
DEFAULT_MAX_SAMPLES = 300  # NNCF's default subset size; a few hundred sequences


class CalibrationError(ValueError):
    """The calibration file is unusable (one line naming the file and what was expected)."""


def _is_tfrecord(head: bytes) -> bool:
    """Whether `head` starts with a TFRecord frame: a length and its masked CRC32C."""
    if len(head) < 12:
        return False
    from albert_tf.data.tfrecord_io import masked_crc32c

    return masked_crc32c([head[:8]])[0].tobytes() == head[8:12]


def _read_records(path: str, limit: int) -> list[Sample]:
    import tensorflow as tf

    samples: list[Sample] = []
    try:
        for raw in tf.data.TFRecordDataset(path).take(limit).as_numpy_iterator():
            example = tf.train.Example.FromString(raw)
            features = example.features.feature
            missing = [name for name in RECORD_FEATURES if name not in features]
            if missing:
                raise CalibrationError(
                    f"--int8_calibration_file={path}: records lack {missing}; expected "
                    f"tf.train.Examples with {list(RECORD_FEATURES)} (run_classifier's, "
                    "run_squad's or run_race's records) or text lines")
            values = [np.asarray(features[name].int64_list.value, np.int64)
                      for name in RECORD_FEATURES]
            if len({len(v) for v in values}) != 1 or not len(values[0]):
                raise CalibrationError(f"--int8_calibration_file={path}: record {len(samples)} "
                                       f"has features of lengths {[len(v) for v in values]}; "
                                       "expected equal, non-zero lengths")
            ids, mask, types = values
            if mask.sum() == 0:  # an all-padding record (the original's padding examples)
                continue
            samples.append({name: value.astype(np.int32)[None, :]
                            for name, value in zip(INPUT_NAMES, (ids, mask, types))})
    except tf.errors.OpError as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CalibrationError(f"--int8_calibration_file={path}: not a readable TFRecord "
                               f"file ({first})") from None
    return samples


def _read_text(path: str, data: bytes, limit: int, spm_model_file: str | None,
               do_lower_case: bool, max_seq_length: int) -> list[Sample]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CalibrationError(f"--int8_calibration_file={path}: neither a TFRecord file nor "
                               "UTF-8 text lines") from None
    if "\x00" in text:
        raise CalibrationError(f"--int8_calibration_file={path}: neither a TFRecord file nor "
                               "text lines (it holds NUL bytes)")
    if not spm_model_file:
        raise CalibrationError(f"--int8_calibration_file={path}: text lines need the export's "
                               "SentencePiece model (--spm_model_file); give a TFRecord file "
                               "of input_ids/input_mask/segment_ids otherwise")
    from albert_tf.tokenization import FullTokenizer, preprocess_text

    tokenizer = FullTokenizer(spm_model_file=spm_model_file)
    samples: list[Sample] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        texts = line.split("\t")[:2]
        pieces = [tokenizer.tokenize(preprocess_text(t, lower=do_lower_case)) for t in texts]
        budget = max_seq_length - len(pieces) - 1  # [CLS], one [SEP] per text
        while sum(len(p) for p in pieces) > budget:  # the original's pair truncation
            longest = max(pieces, key=len)
            longest.pop()
        tokens, types = ["[CLS]"], [0]
        for segment, piece in enumerate(pieces):
            tokens += piece + ["[SEP]"]
            types += [segment] * (len(piece) + 1)
        ids = np.asarray(tokenizer.convert_tokens_to_ids(tokens), np.int32)[None, :]
        samples.append({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                        "input_type_ids": np.asarray(types, np.int32)[None, :]})
        if len(samples) >= limit:
            break
    return samples


def read_calibration(path: str, vocab_size: int, type_vocab_size: int = 2,
                     spm_model_file: str | None = None, do_lower_case: bool = True,
                     max_seq_length: int = 128,
                     limit: int = DEFAULT_MAX_SAMPLES) -> list[Sample]:
    """Up to `limit` calibration samples from `path` (module docstring), checked against the
    model's vocabulary and input limits; raises CalibrationError (one line)."""
    import tensorflow as tf

    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise CalibrationError(f"--int8_calibration_file={path}: file not found")
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    if not data.strip():
        raise CalibrationError(f"--int8_calibration_file={path}: the file is empty; expected "
                               "text lines or a TFRecord file of input_ids/input_mask/"
                               "segment_ids")
    if _is_tfrecord(data[:12]):
        samples = _read_records(path, limit)
    else:
        samples = _read_text(path, data, limit, spm_model_file, do_lower_case, max_seq_length)
    if not samples:
        raise CalibrationError(f"--int8_calibration_file={path}: no sequences in it")
    check_samples(samples, path, vocab_size, type_vocab_size, max_seq_length)
    return samples


def check_samples(samples: Sequence[Sample], path: str, vocab_size: int, type_vocab_size: int,
                  max_seq_length: int) -> None:
    """Refuses ids outside the vocabulary (a file tokenized for another model), token types
    outside type_vocab_size, and sequences longer than the model takes."""
    for index, sample in enumerate(samples):
        ids, types = sample["input_word_ids"], sample["input_type_ids"]
        if ids.shape[1] > max_seq_length:
            raise CalibrationError(f"--int8_calibration_file={path}: sequence {index} has "
                                   f"{ids.shape[1]} tokens; the model takes at most "
                                   f"{max_seq_length}")
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise CalibrationError(f"--int8_calibration_file={path}: sequence {index} has id "
                                   f"{int(ids.max() if ids.max() >= vocab_size else ids.min())}"
                                   f", outside the model's vocabulary [0, {vocab_size}) — "
                                   "tokenized for another model?")
        if types.min() < 0 or types.max() >= type_vocab_size:
            raise CalibrationError(f"--int8_calibration_file={path}: sequence {index} has "
                                   f"segment id {int(types.max())}, outside [0, "
                                   f"{type_vocab_size})")


def split_held_out(samples: Sequence[Sample]) -> tuple[list[Sample], list[Sample]]:
    """(calibration, held-out) samples: every eighth sample (at least one, when there are two
    or more) is kept out of calibration for the accuracy gate."""
    samples = list(samples)
    if len(samples) < 2:
        return samples, samples
    held = set(range(7, len(samples), 8)) or {len(samples) - 1}
    return ([s for i, s in enumerate(samples) if i not in held],
            [s for i, s in enumerate(samples) if i in held])


def task_calibration(options: Any, training_records: str, vocab_size: int,
                     type_vocab_size: int, max_seq_length: int) -> list[Sample] | None:
    """The calibration samples of a task export (run_classifier / run_squad --export_dir):
    `--int8_calibration_file` when given, else the run's own training records when they exist
    and `--int8_calibration_steps` is above 0 (None: no static int8 artifact)."""
    import tensorflow as tf
    from absl import logging

    path = options.int8_calibration_file
    limit = options.int8_calibration_steps or DEFAULT_MAX_SAMPLES
    if not path:
        if not options.int8_calibration_steps:
            return None
        if not tf.io.gfile.exists(training_records):
            logging.info("int8: no static int8 artifact (no --int8_calibration_file and no "
                         "training records at %s)", training_records)
            return None
        path = training_records
    return read_calibration(path, vocab_size, type_vocab_size, options.spm_model_file,
                            options.do_lower_case, max_seq_length, limit)
