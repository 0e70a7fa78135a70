"""Task models: classifier and multiple choice against the encoder they wrap."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertMultipleChoice
from albert_tf.models.encoder import encoder_inputs
from tests.conftest import random_inputs, tiny_config
from tests.layers.test_layers import randomize
from tests.models.test_pretrainer import (assert_same_outputs_and_gradients,
                                          block_matmul_rows, traced_ops)

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def test_classifier_logits_are_the_head_on_the_pooled_output():
    config = tiny_config()
    model = AlbertClassifier(config, num_classes=3)
    feed = {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}
    logits = np.asarray(model(feed)["logits"])
    pooled = np.asarray(model.encoder(feed)["pooled_output"])
    head = model.classifier_head
    np.testing.assert_allclose(logits, pooled @ head.output_weights.numpy().T + head.output_bias.numpy(),
                               atol=1e-5)
    assert head.dropout_rate == 0.1  # hard-coded in the original (faithfulness Q20)
    names = checkpoints.variable_map(model)
    assert names["output_weights"].shape == (3, 32) and names["output_bias"].shape == (3,)


def test_multiple_choice_scores_each_option_separately():
    config = tiny_config()
    model = AlbertMultipleChoice(config, num_choices=4)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 100, (2, 4, 10)).astype("int32")
    feed = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    logits = np.asarray(model(feed)["logits"])
    assert logits.shape == (2, 4)
    one = {k: v[1, 2][None] for k, v in feed.items()}  # example 1, option 2 alone
    pooled = np.asarray(model.encoder(one)["pooled_output"])
    head = model.classifier_head
    np.testing.assert_allclose(logits[1, 2], (pooled @ head.output_weights.numpy().T)[0, 0]
                               + head.output_bias.numpy()[0], atol=1e-5)
    assert checkpoints.variable_map(model)["output_weights"].shape == (1, 32)


def head_on_full_encoder(model, inputs, training):
    """The original's order: every row of every block, the pooled output, the head."""
    pooled = model.encoder({k: inputs[k] for k in ENCODER_KEYS}, training=training)["pooled_output"]
    return {"logits": model.classifier_head(pooled, training=training)}


def choices_on_full_encoder(model, inputs, training):
    flat = {k: tf.reshape(inputs[k], [-1, inputs[k].shape[-1]]) for k in ENCODER_KEYS}
    return {"logits": tf.reshape(head_on_full_encoder(model, flat, training)["logits"],
                                 (-1, model.num_choices))}


def choice_inputs(config, batch=2, choices=3, seq=10):
    """[B, C, S] inputs, some options padded."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, config.vocab_size, (batch, choices, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, :, seq - 3:] = 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("kind", ["classifier", "multiple_choice"])
def test_the_last_block_runs_at_the_first_token_with_the_same_results(kind, training):
    """Training and inference compute the last block at the first token alone (the only row
    the head reads): logits and gradients equal the full encoder's, the traced forward's
    last-block matmuls have one row per sequence, and the row is a slice (no gather in the
    blocks, for the engines the task exports go to)."""
    config = tiny_config(num_hidden_layers=3, num_hidden_groups=2)
    if kind == "classifier":
        model, reference = AlbertClassifier(config, 3, dropout_rate=0.0), head_on_full_encoder
        inputs = {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}
        sequences, seq = 3, 12
    else:
        model, reference = AlbertMultipleChoice(config, 3, dropout_rate=0.0), choices_on_full_encoder
        inputs, sequences, seq = choice_inputs(config), 2 * 3, 10
    model(inputs)
    for layer in (model.encoder, model.classifier_head):
        randomize(layer)
    assert_same_outputs_and_gradients(model, inputs, training, reference)
    assert (block_matmul_rows(model, inputs, config, training)
            == [sequences] * 4 + [sequences * seq] * (12 + 2))
    assert not [op.name for op in traced_ops(model, inputs, training)
                if "transformer" in op.name and "Gather" in op.type]


def test_an_encoder_that_is_not_ours_trains_through_its_own_graph():
    """With another encoder (an export's `HubEncoder`, any Keras model with our outputs), every
    call runs the functional graph: the encoder is called whole."""
    config = tiny_config()
    inner = AlbertEncoder(config)
    symbolic = encoder_inputs()
    wrapped = keras.Model(symbolic, inner(symbolic))
    model = AlbertClassifier(config, 3, dropout_rate=0.0, encoder=wrapped)
    inputs = {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}
    got = model(inputs, training=True)["logits"]
    np.testing.assert_allclose(got, head_on_full_encoder(model, inputs, True)["logits"], atol=1e-6)
    assert block_matmul_rows(model, inputs, config) == [3 * 12] * 12
