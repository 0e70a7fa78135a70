"""AlbertPretrainer's call: the heads on the full encoder output (the original's order: encode,
then gather the masked positions), with the last block computed only at the rows they read."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import INPUT_NAMES, AlbertPretrainer
from tests.conftest import random_inputs, tiny_config
from tests.layers.test_layers import randomize

def full_then_gather(model, inputs, training):
    """The original's pretraining forward: every row of the encoder, then the heads."""
    encoded = model.encoder({k: inputs[k] for k in INPUT_NAMES}, training=training)
    return {"mlm_logits": model.mlm_head(encoded["sequence_output"], inputs["masked_lm_positions"]),
            "sop_logits": model.sop_head(encoded["pooled_output"])}


def assert_same_outputs_and_gradients(model, inputs, training, reference):
    """`model(inputs)` against `reference(model, inputs, training)`: outputs within round-off,
    gradients of one scalar of them within round-off of each variable's scale."""
    with tf.GradientTape(persistent=True) as tape:
        got = model(inputs, training=training)
        expected = reference(model, inputs, training)
        losses = [tf.add_n([tf.reduce_sum(tf.sin(out[name])) for name in sorted(out)])
                  for out in (got, expected)]
    for name in expected:
        assert got[name].shape == expected[name].shape
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # Gradients sum over every block application: round-off relative to each one's scale.
    # The key bias's is zero but for round-off (softmax ignores a shift shared by all keys).
    variables = model.trainable_variables
    pairs = [(tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()) for a, b in zip(
        tape.gradient(losses[0], variables), tape.gradient(losses[1], variables))]
    largest = max(np.abs(b).max() for _, b in pairs)
    for (a, b), v in zip(pairs, variables):
        if v.path.endswith("key/bias"):
            assert np.abs(a).max() < 1e-6 * largest, v.path
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * np.abs(b).max(), err_msg=v.path)


def traced_ops(model, inputs, training: bool = True) -> list[tf.Operation]:
    """The ops of `model(inputs, training=training)` traced with `inputs`' shapes."""
    inputs = {k: tf.constant(v) for k, v in inputs.items()}
    graph = tf.function(lambda x: model(x, training=training)).get_concrete_function(inputs).graph
    return graph.get_operations()


def block_matmul_rows(model, inputs, config, training: bool = True) -> list[int]:
    """Rows of each matmul of the encoder's blocks in the traced forward, sorted."""
    return sorted(op.outputs[0].shape[0] for op in traced_ops(model, inputs, training)
                  if op.type == "MatMul" and "transformer" in op.name
                  and op.outputs[0].shape[-1] in (config.hidden_size, config.intermediate_size))


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("recompute", [False, True])
def test_outputs_and_gradients_equal_the_full_encoder_then_gather(training, recompute):
    config = tiny_config(num_hidden_layers=3, inner_group_num=2)
    model = AlbertPretrainer(config)
    inputs = random_inputs(config)
    model(inputs)
    for layer in (model.encoder, model.mlm_head, model.sop_head):
        randomize(layer)
    model.encoder.transformer.recompute_grad = recompute
    assert_same_outputs_and_gradients(model, inputs, training, full_then_gather)


def test_int64_inputs_as_the_records_hold_them():
    config = tiny_config()
    model = AlbertPretrainer(config)
    inputs = random_inputs(config)
    wide = {k: v.astype("int64") for k, v in inputs.items()}
    np.testing.assert_array_equal(model(wide)["mlm_logits"], model(inputs)["mlm_logits"])


def test_last_block_runs_on_the_masked_rows_and_the_first_only():
    """In the traced train forward, the last block's query, output, intermediate and FFN output
    matmuls have B·(P+1) rows; every other matmul of the blocks has B·S."""
    config = tiny_config(num_hidden_layers=2)
    model = AlbertPretrainer(config)
    batch, seq, masked = 3, 12, 4
    inputs = random_inputs(config, batch, seq, masked)
    model(inputs)
    assert block_matmul_rows(model, inputs, config) == (
        [batch * (masked + 1)] * 4 + [batch * seq] * (6 + 2))
