"""--init_checkpoint: original TF1 and our checkpoints, init_from_group0 with Q34 fixed (§3.5)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import CheckpointMismatchError, save_original_checkpoint
from albert_tf.models import AlbertPretrainer
from albert_tf.training.checkpointing import TrainingCheckpoint
from albert_tf.training.optimizers import LAMB
from albert_tf.checkpoints import warm_start
from tests.conftest import random_inputs, tiny_config


def built(config):
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    return model


def sublayer_weights(model, group):
    stack = model.encoder.transformer
    index = stack.attention_scopes.index(f"group_{group}/inner_group_0")
    return [w.numpy() for w in stack.attention_layers[index].weights + stack.feed_forward_layers[index].weights]


@pytest.fixture(scope="module")
def one_group_model():
    return built(tiny_config(num_hidden_layers=3))


def assert_every_group_is_group0_of(model, source, groups):
    expected = sublayer_weights(source, 0)
    for group in range(groups):
        for got, want in zip(sublayer_weights(model, group), expected):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(model.encoder.embedding_layer.word_embeddings.numpy(),
                                  source.encoder.embedding_layer.word_embeddings.numpy())


def test_original_checkpoint_init_from_group0_fills_every_group(tmp_path, one_group_model):
    path = save_original_checkpoint(one_group_model, str(tmp_path / "model.ckpt"))
    three_groups = tiny_config(num_hidden_layers=3, num_hidden_groups=3)
    with pytest.raises(CheckpointMismatchError, match="group_1"):
        warm_start(built(three_groups), path)  # strict without the flag
    model = built(three_groups)
    warm_start(model, path, init_from_group0=True)
    # Q34 fixed: groups 0, 1 and 2 all hold group 0's attention and FFN weights.
    assert_every_group_is_group0_of(model, one_group_model, 3)


def test_group0_copy_leaves_groups_the_checkpoint_has(tmp_path):
    source = built(tiny_config(num_hidden_layers=2, num_hidden_groups=2))
    path = save_original_checkpoint(source, str(tmp_path / "model.ckpt"))
    model = built(tiny_config(num_hidden_layers=2, num_hidden_groups=2))
    warm_start(model, path, init_from_group0=True)
    for group in range(2):
        for got, want in zip(sublayer_weights(model, group), sublayer_weights(source, group)):
            np.testing.assert_array_equal(got, want)


def test_our_checkpoint_warm_start_and_group0(tmp_path, one_group_model):
    optimizer = LAMB(learning_rate=0.1)
    optimizer.build(one_group_model.trainable_variables)
    checkpoint = TrainingCheckpoint(str(tmp_path), one_group_model, optimizer,
                                    tf.Variable(7, dtype=tf.int64))
    checkpoint.save(7)
    same = built(tiny_config(num_hidden_layers=3))
    warm_start(same, str(tmp_path))  # a directory: its latest checkpoint
    for a, b in zip(same.trainable_variables, one_group_model.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    model = built(tiny_config(num_hidden_layers=3, num_hidden_groups=3))
    warm_start(model, str(tmp_path), init_from_group0=True)
    assert_every_group_is_group0_of(model, one_group_model, 3)


def test_full_pretraining_checkpoint_counts_each_variable_once(tmp_path, caplog):
    """Issue 28: the tied MLM head references the 5 embedding tables; they are encoder
    variables, counted there only, so a full checkpoint reads "7/7" head variables, not
    "7/12". The counts come from the checkpoint's own names: `bert/…` encoder, `cls/…` heads."""
    import logging

    config = tiny_config()
    path = save_original_checkpoint(built(config), str(tmp_path / "model.ckpt"), global_step=3)
    names = [name for name, _ in tf.train.list_variables(path) if name != "global_step"]
    encoder = len([n for n in names if n.startswith("bert/")])
    heads = len([n for n in names if n.startswith("cls/")])
    assert encoder + heads == len(names) and heads == 7
    with caplog.at_level(logging.INFO, logger="absl"):
        report = warm_start(built(config), path, init_from_group0=False)
    assert (report.encoder_restored, report.encoder_total) == (encoder, encoder)
    assert (report.head_restored, report.head_total) == (heads, heads)
    assert (f"restored {encoder}/{encoder} encoder variables and {heads}/{heads} mlm-head + "
            f"sop-head variables from original TF1 checkpoint {path}") in caplog.text
