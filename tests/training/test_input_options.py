"""Evaluation and prediction passes read their data with tf.data's autotuning off
(albert_tf.training.input_options): the same batches, the caller's other options kept; the
training iterator's options follow TRAINING_AUTOTUNE (tests/conftest.py turns it off)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert_tf.training import input_options
from albert_tf.training.input_options import without_autotune
from tests.training import synthetic
from tests.training.test_loop import make_trainer


def test_the_same_batches_with_autotuning_off_and_other_options_kept():
    options = tf.data.Options()
    options.deterministic = True
    dataset = tf.data.Dataset.range(10).map(lambda x: 2 * x, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(4).prefetch(tf.data.AUTOTUNE).with_options(options)
    plain = without_autotune(dataset)
    assert plain.options().autotune.enabled is False and plain.options().deterministic is True
    assert dataset.options().autotune.enabled is not False  # the caller's dataset untouched
    np.testing.assert_array_equal(np.concatenate(list(plain.as_numpy_iterator())),
                                  2 * np.arange(10))


def test_trainer_evaluate_reads_each_pass_without_the_autotuner(tmp_path, monkeypatch):
    seen = []

    def spy(dataset):
        seen.append(without_autotune(dataset))
        return seen[-1]

    monkeypatch.setattr(input_options, "without_autotune", spy)
    trainer = make_trainer(tmp_path, steps=2)
    first = trainer.evaluate(synthetic.dataset_fn(8), steps=2)
    second = trainer.evaluate(synthetic.dataset_fn(8), steps=2)
    assert len(seen) == 2 and all(d.options().autotune.enabled is False for d in seen)
    assert first["loss"] == second["loss"] and np.isfinite(first["loss"])


def test_the_training_iterator_keeps_the_autotuner_unless_told(monkeypatch):
    for autotune in (True, False):
        monkeypatch.setattr(input_options, "TRAINING_AUTOTUNE", autotune)
        options = input_options.training_options()
        assert options.autotune.enabled is (None if autotune else False)  # None: TF's default, on
        assert (options.experimental_external_state_policy
                == tf.data.experimental.ExternalStatePolicy.WARN)


def test_the_trainer_reads_its_training_data_with_those_options(tmp_path, monkeypatch):
    made, original = [], input_options.training_options

    def spy():
        made.append(original())
        return made[-1]

    monkeypatch.setattr(input_options, "training_options", spy)
    trainer = make_trainer(tmp_path, steps=2)
    trainer.train(synthetic.dataset_fn(8))
    assert len(made) == 1 and made[0].autotune.enabled is False  # the suite's setting
