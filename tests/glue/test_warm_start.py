"""--init_checkpoint: original TF1 or ours; every encoder variable restored and counted, the
classifier head may start fresh; a partial encoder is refused (faithfulness §3.5, §8.1)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import CheckpointMismatchError, save_original_checkpoint
from albert_tf.checkpoints import head_parts, warm_start
from albert_tf.models import AlbertClassifier, AlbertPretrainer
from albert_tf.checkpoints.ours import keyed_variables
from tests.conftest import random_inputs, tiny_config


def _built(model, config):
    inputs = random_inputs(config)
    inputs.pop("masked_lm_positions") if not isinstance(model, AlbertPretrainer) else None
    model(inputs)
    return model


def test_from_an_original_tf1_checkpoint(tmp_path, caplog):
    config = tiny_config()
    pretrainer = _built(AlbertPretrainer(config), config)
    path = save_original_checkpoint(pretrainer, str(tmp_path / "model.ckpt"))
    classifier = AlbertClassifier(config, 3)
    with caplog.at_level(logging.INFO, logger="absl"):
        report = warm_start(classifier, path, head_parts(classifier))
    assert (report.encoder_restored, report.encoder_total) == (25, 25)
    assert (report.head_restored, report.head_total) == (0, 2)
    assert report.missing == ["output_weights", "output_bias"]
    assert "restored 25/25 encoder variables and 0/2 classifier-head variables" in caplog.text
    for ours, theirs in zip(classifier.encoder.weights, pretrainer.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_from_one_of_our_checkpoints_and_refusing_a_partial_encoder(tmp_path):
    config = tiny_config()
    pretrainer = _built(AlbertPretrainer(config), config)
    ours = tf.train.Checkpoint(model=keyed_variables(pretrainer.variables)).write(str(tmp_path / "ours"))
    classifier = AlbertClassifier(config, 2)
    report = warm_start(classifier, ours, head_parts(classifier))
    assert (report.encoder_restored, report.encoder_total, report.head_restored) == (25, 25, 0)
    np.testing.assert_array_equal(classifier.encoder.pooler.dense.kernel.numpy(),
                                  pretrainer.encoder.pooler.dense.kernel.numpy())
    # A checkpoint lacking encoder variables (here: the pooler) is an error, not a silent
    # partly-random start.
    partial = {k: v for k, v in keyed_variables(pretrainer.variables).items() if "pooler" not in k}
    path = tf.train.Checkpoint(model=partial).write(str(tmp_path / "partial"))
    with pytest.raises(CheckpointMismatchError, match="lacks 2 encoder variable"):
        warm_start(classifier := AlbertClassifier(config, 2), path, head_parts(classifier))
