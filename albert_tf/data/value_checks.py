"""In-graph range checks of pre-training batches: an id the model cannot look up stops the run
with one message naming the file, the record, the feature and the model setting.

Why: an embedding or softmax lookup with an id past `vocab_size` fails on CPU with a bare
`indices[…] = 1201 is not in [0, 1000)` and silently returns zeros on GPU. The check runs in
the tf.data pipeline, i.e. on the host, so it fires the same way whatever device trains.
`bad_record_message` recovers the message from the error the training step raises.
"""

from __future__ import annotations

import dataclasses
import re

import tensorflow as tf

# The message travels inside TensorFlow's error text between these tags.
_OPEN, _CLOSE = "<<albert_tf bad record: ", " :albert_tf>>"
_TAGGED = re.compile(re.escape(_OPEN) + "(.*?)" + re.escape(_CLOSE), re.DOTALL)
# Each record carries RECORD_KEY = file index · RECORDS_PER_FILE + record number in its file.
RECORD_KEY, RECORDS_PER_FILE = "_record_key", 2**40


@dataclasses.dataclass(frozen=True)
class IdLimits:
    """Upper bounds the model puts on record values (the features of faithfulness §6.2).

    Attributes:
      vocab_size: input_ids and masked_lm_ids must be below it.
      type_vocab_size: segment_ids must be below it.
      source: where the bounds come from, named in the error (e.g. "--albert_config_file=c.json").
    """

    vocab_size: int
    type_vocab_size: int = 2
    source: str = "the model config"


def _rules(limits: IdLimits, max_seq_length: int) -> list[tuple[str, int, str]]:
    """(feature, exclusive upper bound, what the bound is) for every checked feature."""
    return [
        ("input_ids", limits.vocab_size, f"vocab_size of {limits.source}"),
        ("masked_lm_ids", limits.vocab_size, f"vocab_size of {limits.source}"),
        ("segment_ids", limits.type_vocab_size, f"type_vocab_size of {limits.source}"),
        ("masked_lm_positions", max_seq_length, "--max_seq_length"),
        ("next_sentence_labels", 2, "the sentence-order labels"),
    ]


def check_batch(batch: dict[str, tf.Tensor], files: list[str], limits: IdLimits,
                max_seq_length: int) -> dict[str, tf.Tensor]:
    """`batch` without its RECORD_KEY, after asserting every checked feature lies in
    [0, bound); the first offending value is reported with its file and record number.

    The checked features are compared as one [B, columns] matrix against a bound per column,
    without control flow: a few ops per batch (benchmarks/record_checks_overhead.py).
    """
    columns, bounds, descriptions, rule_of_column = [], [], [], []
    for name, bound, what in _rules(limits, max_seq_length):
        if name not in batch:
            continue
        values = tf.reshape(batch[name], [tf.shape(batch[name])[0], -1])
        width = values.shape[1]
        columns.append(values)
        bounds += [bound] * width
        rule_of_column += [len(descriptions)] * width
        descriptions.append(f"{name} holds {{}}, outside [0, {bound}) ({what})")
    values = tf.concat(columns, axis=1)
    bad = (values < 0) | (values >= tf.constant(bounds, values.dtype))
    bad_rows = tf.reduce_any(bad, axis=1)
    row = tf.argmax(bad_rows, output_type=tf.int32)
    column = tf.argmax(bad[row], output_type=tf.int32)
    rule = tf.gather(tf.constant(rule_of_column), column)
    description = tf.strings.split(tf.gather(tf.constant(descriptions), rule), "{}")
    key = batch[RECORD_KEY][row]
    text = tf.strings.join([
        _OPEN, tf.gather(tf.constant(files), key // RECORDS_PER_FILE), ": record ",
        tf.strings.as_string(key % RECORDS_PER_FILE), ": ", description[0],
        tf.strings.as_string(values[row, column]), description[1], _CLOSE])
    check = tf.debugging.Assert(tf.logical_not(tf.reduce_any(bad_rows)), [text])
    with tf.control_dependencies([check]):
        return {k: tf.identity(v) for k, v in batch.items() if k != RECORD_KEY}


def bad_record_message(error: BaseException) -> str | None:
    """The message `check_batch` raised inside `error` (a TF error from a training or
    evaluation step), or None when the error is something else."""
    found = _TAGGED.search(str(error))
    return found.group(1) if found else None
