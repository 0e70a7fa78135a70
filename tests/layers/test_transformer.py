"""The shared stack: the original's layer → group schedule, the block, and recomputation."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf import layers as L
from albert_tf.layers import dropout as dropout_lib
from albert_tf.models import AlbertClassifier
from tests.conftest import random_inputs, tiny_config
from tests.layers.test_layers import randomize


def test_stack_schedule_uses_the_float_group_formula_at_22_layers():
    """L = G = 22: 15/22·22 = 14.999… → layer 15 reuses group 14; group 15 never exists
    (faithfulness §2.3). The integer form (i·G)//L would give 22 distinct groups."""
    stack = L.SharedTransformerStack(8, 22, 2, 16, num_hidden_groups=22)
    groups = [int(stack.attention_scopes[a].split("/")[0].removeprefix("group_"))
              for a, _ in stack.schedule]
    assert groups == list(range(15)) + [14] + list(range(16, 22))
    assert "group_15/inner_group_0" not in stack.attention_scopes
    assert len(stack.attention_layers) == len(stack.feed_forward_layers) == 21
    config = AlbertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2,
                          num_hidden_layers=22, num_hidden_groups=22)
    assert groups == [config.group_of_layer(i) for i in range(22)]


def test_transformer_block_equals_a_one_layer_stack():
    block = L.TransformerBlock(16, 4, 24, "gelu")
    stack = L.SharedTransformerStack(16, 1, 4, 24)
    x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    block(x, mask)
    stack(x, mask)
    randomize(block)
    stack.set_weights(block.get_weights())
    np.testing.assert_allclose(block(x, mask), stack(x, mask)[-1], atol=1e-6)


@pytest.mark.parametrize("recompute", [False, True])
def test_stack_last_positions_compute_only_those_rows_of_the_last_block(recompute):
    """`last_positions`: the earlier blocks' outputs are the full ones; the last block's are
    the full last output's rows at those positions (recomputed blocks too), gradients equal."""
    stack = L.SharedTransformerStack(16, 3, 4, 24, num_hidden_groups=2)
    x = tf.constant(np.random.default_rng(5).normal(size=(2, 7, 16)).astype("float32"))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2], "int32")
    positions = np.array([[0, 6, 1], [0, 4, 2]], "int32")
    stack(x, mask)
    randomize(stack)
    stack.recompute_grad = recompute
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        full = stack(x, mask, training=True)
        rows = stack(x, mask, training=True, last_positions=positions)
        picked = tf.gather(full[-1], positions, batch_dims=1)
        losses = [tf.reduce_sum(tf.sin(picked)), tf.reduce_sum(tf.sin(rows[-1]))]
    for a, b in zip(full[:-1], rows[:-1]):
        np.testing.assert_array_equal(a, b)
    assert rows[-1].shape == (2, 3, 16)
    np.testing.assert_allclose(rows[-1], picked, atol=1e-5)
    sources = [x] + stack.trainable_variables
    for a, b, name in zip(tape.gradient(losses[0], sources), tape.gradient(losses[1], sources),
                          ["x"] + [v.path for v in stack.trainable_variables]):
        np.testing.assert_allclose(tf.convert_to_tensor(b), tf.convert_to_tensor(a), atol=1e-5,
                                   err_msg=name)


def classifier_gradients(model, inputs, recompute: bool, compiled: bool = False):
    """Loss, gradients and dropout generator states after one training step (eager or in a
    tf.function); the generators are then restored, so the next call draws the same masks."""
    model.encoder.transformer.recompute_grad = recompute
    generators = [v for v in model.non_trainable_variables if "seed_generator" in v.path]
    states = [v.numpy() for v in generators]

    def step():
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)["logits"]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits([0, 2, 1],
                                                                                 logits))
        return loss, [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]

    loss, grads = (tf.function(step) if compiled else step)()
    grads = [g.numpy() for g in grads]
    after = [v.numpy() for v in generators]
    for v, state in zip(generators, states):
        v.assign(state)
    return float(loss), grads, after


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_recomputed_blocks_give_the_plain_gradients(dropout):
    """--recompute_grad: same loss and gradients (≤ 1e-5), dropout off and on (the
    recomputation redraws the forward pass's masks), and the same generator states after."""
    keras.utils.set_random_seed(1)
    config = tiny_config(num_hidden_layers=3, num_hidden_groups=2, hidden_dropout_prob=dropout,
                         attention_probs_dropout_prob=dropout)
    model = AlbertClassifier(config, 3)
    inputs = {k: v for k, v in random_inputs(config).items() if k != "masked_lm_positions"}
    loss, grads, states = classifier_gradients(model, inputs, recompute=False)
    for compiled in (False, True):
        got_loss, got_grads, got_states = classifier_gradients(model, inputs, True, compiled)
        assert got_loss == pytest.approx(loss, abs=1e-6)
        for a, b, v in zip(grads, got_grads, model.trainable_variables):
            np.testing.assert_allclose(b, a, atol=1e-5, rtol=0, err_msg=v.path)
        for a, b in zip(states, got_states):
            np.testing.assert_array_equal(a, b)
    assert max(np.abs(g).max() for g in grads) > 1e-3


def test_recompute_without_the_drawn_seeds_would_be_wrong(monkeypatch):
    """The check above has teeth: letting the recomputation draw fresh masks changes the
    gradients."""
    keras.utils.set_random_seed(1)
    config = tiny_config(hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
    model = AlbertClassifier(config, 3)
    inputs = {k: v for k, v in random_inputs(config).items() if k != "masked_lm_positions"}
    _, grads, _ = classifier_gradients(model, inputs, recompute=False)
    monkeypatch.setattr("albert_tf.layers.transformer.draw_seeds",
                        lambda layers: (None,) * len(layers))
    _, fresh_masks, _ = classifier_gradients(model, inputs, recompute=True)
    assert max(np.abs(a - b).max() for a, b in zip(grads, fresh_masks)) > 1e-3


def test_drawn_seed_reproduces_the_layers_own_mask():
    layer = keras.layers.Dropout(0.4, seed=3)
    x = np.ones((4, 50), "float32")
    state = layer.seed_generator.state.numpy()
    seed = dropout_lib.draw_seed(layer)
    twice = [dropout_lib.apply_dropout(layer, x, True, seed) for _ in range(2)]
    layer.seed_generator.state.assign(state)
    np.testing.assert_array_equal(twice[0], layer(x, training=True))
    np.testing.assert_array_equal(twice[0], twice[1])
    assert 0.3 < float(np.mean(twice[0] == 0)) < 0.5
    np.testing.assert_array_equal(dropout_lib.apply_dropout(layer, x, False, seed), x)
    assert dropout_lib.draw_seed(keras.layers.Dropout(0.0)) is None
