"""In-graph value checks of the pre-training input: the first id the model cannot look up
stops the input with a message naming file, record, feature and bound."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import pretraining_dataset
from albert_tf.data.value_checks import IdLimits, bad_record_message
from tests.data import record_files

SEQ, PRED = 16, 4
LIMITS = IdLimits(vocab_size=100, type_vocab_size=2, source="--albert_config_file=c.json")


def files_with(tmp_path, feature: str, row: int, column: int, value: int) -> list[str]:
    """Two files of 6 records; file 2's record `row` has `feature[column] = value`."""
    good = record_files.write(str(tmp_path / "a.tfrecord"), record_files.rows(6, SEQ, PRED, seed=1))
    features = record_files.rows(6, SEQ, PRED, seed=2)
    features[feature][row, column] = value
    return [good, record_files.write(str(tmp_path / "b.tfrecord"), features)]


def error_of(dataset) -> str:
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        for _ in dataset:
            pass
    message = bad_record_message(error.value)
    assert message is not None, str(error.value)[:500]
    return message


@pytest.mark.parametrize("feature,value,bound", [
    ("input_ids", 1201, "outside [0, 100) (vocab_size of --albert_config_file=c.json)"),
    ("masked_lm_ids", 100, "outside [0, 100) (vocab_size of --albert_config_file=c.json)"),
    ("segment_ids", 2, "outside [0, 2) (type_vocab_size of --albert_config_file=c.json)"),
    ("masked_lm_positions", SEQ, f"outside [0, {SEQ}) (--max_seq_length)"),
    ("next_sentence_labels", 2, "outside [0, 2) (the sentence-order labels)"),
])
def test_eval_pass_names_file_record_feature_and_bound(tmp_path, feature, value, bound):
    files = files_with(tmp_path, feature, row=4, column=0, value=value)
    dataset = pretraining_dataset(files, 3, SEQ, PRED, is_training=False, id_limits=LIMITS)
    assert error_of(dataset) == f"{files[1]}: record 4: {feature} holds {value}, {bound}"


def test_training_pipeline_fails_the_same_way(tmp_path):
    files = files_with(tmp_path, "input_ids", row=2, column=5, value=1201)
    dataset = pretraining_dataset(files, 4, SEQ, PRED, seed=3, id_limits=LIMITS)
    message = error_of(dataset.take(20))
    assert message.startswith(f"{files[1]}: record 2: input_ids holds 1201, outside [0, 100)")


def test_checks_leave_batches_and_their_order_unchanged(tmp_path):
    files = [record_files.write(str(tmp_path / f"{i}.tfrecord"),
                                record_files.rows(7, SEQ, PRED, seed=i)) for i in range(3)]

    def batches(**kwargs):
        dataset = pretraining_dataset(files, 4, SEQ, PRED, seed=7, **kwargs).take(12)
        return [{k: v.numpy() for k, v in batch.items()} for batch in dataset]

    plain, checked = batches(), batches(id_limits=LIMITS)
    assert [sorted(b) for b in checked] == [sorted(b) for b in plain]
    for a, b in zip(plain, checked):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_other_errors_are_not_taken_for_bad_records():
    assert bad_record_message(tf.errors.InvalidArgumentError(None, None, "indices[3] = 7")) is None
