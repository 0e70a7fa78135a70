"""AlbertEncoder / AlbertPretrainer: structure, sharing modes, dropout, tf.train checkpoints.

Saving to .keras and mixed precision: tests/models/test_all_models.py."""

import numpy as np
import pytest

from albert_tf.models import AlbertEncoder, AlbertPretrainer
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_feed(inputs):
    return {k: inputs[k] for k in ENCODER_KEYS}


def test_outputs_and_layer_group_schedule():
    config = tiny_config(num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2)
    encoder = AlbertEncoder(config)
    out = encoder(encoder_feed(random_inputs(config, batch=2, seq=7)))
    assert out["sequence_output"].shape == (2, 7, 32) and out["pooled_output"].shape == (2, 32)
    assert len(out["encoder_outputs"]) == 5 * 2  # every inner-group output (faithfulness §2.6)
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
    stack = encoder.transformer
    # Layers 0-2 → group 0, 3-4 → group 1; blocks k = 0, 1 inside each.
    assert [stack.attention_scopes[a] for a, _ in stack.schedule] == [
        f"group_{g}/inner_group_{k}" for g in (0, 0, 0, 1, 1) for k in (0, 1)]


@pytest.mark.parametrize("sharing, attention_copies, ffn_copies", [
    ("all", 1, 1), ("attention", 1, 3), ("ffn", 3, 1), ("none", 3, 3)])
def test_sharing_modes_reuse_the_same_layer_objects(sharing, attention_copies, ffn_copies):
    encoder = AlbertEncoder(tiny_config(num_hidden_layers=3, cross_layer_sharing=sharing))
    stack = encoder.transformer
    assert len(stack.attention_layers) == attention_copies
    assert len(stack.feed_forward_layers) == ffn_copies
    assert len({id(stack.attention_layers[a]) for a, _ in stack.schedule}) == attention_copies
    if sharing == "attention":
        assert stack.feed_forward_scopes == [f"layer_{i}/inner_group_0" for i in range(3)]


def test_shared_layers_apply_the_same_function():
    # With sharing "all", layers 2..L repeat one function: feeding layer 1's output to the
    # block again must give layer 2's output.
    config = tiny_config(num_hidden_layers=3)
    encoder = AlbertEncoder(config)
    inputs = random_inputs(config)
    outs = encoder(encoder_feed(inputs))["encoder_outputs"]
    stack = encoder.transformer
    again = stack.feed_forward_layers[0](stack.attention_layers[0](outs[0], inputs["input_mask"]))
    np.testing.assert_allclose(again, outs[1], atol=1e-5)


def test_any_batch_and_length_and_too_long_sequences():
    config = tiny_config()
    encoder = AlbertEncoder(config)
    for batch, seq in [(1, 1), (5, 64), (2, 17)]:
        ids = np.ones((batch, seq), "int32")
        assert encoder({"input_word_ids": ids, "input_mask": ids,
                        "input_type_ids": 0 * ids})["sequence_output"].shape == (batch, seq, 32)
    ids = np.ones((1, 65), "int32")
    with pytest.raises(Exception, match="exceeds max_position_embeddings"):
        encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids})


def test_training_flag_controls_dropout():
    config = tiny_config(hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
    encoder = AlbertEncoder(config)
    feed = encoder_feed(random_inputs(config))
    inference = [np.asarray(encoder(feed)["sequence_output"]) for _ in range(2)]
    train = [np.asarray(encoder(feed, training=True)["sequence_output"]) for _ in range(2)]
    np.testing.assert_array_equal(*inference)
    assert np.abs(train[0] - train[1]).max() > 1e-3


def test_tf_train_checkpoint_holds_every_variable(tmp_path):
    # tf.train.Checkpoint follows attributes: every shared block must be reachable.
    config = tiny_config(num_hidden_layers=3, cross_layer_sharing="attention")
    model = AlbertPretrainer(config)
    inputs = random_inputs(config)
    expected = model(inputs)["mlm_logits"]
    import tensorflow as tf
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    saved = [n for n, _ in tf.train.list_variables(path) if n.endswith("VARIABLE_VALUE")]
    assert len(saved) == len(model.weights)
    fresh = AlbertPretrainer(config)
    tf.train.Checkpoint(model=fresh).read(path).assert_existing_objects_matched()
    np.testing.assert_array_equal(fresh(inputs)["mlm_logits"], expected)
