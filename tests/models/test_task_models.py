"""Task models: classifier and multiple choice against the encoder they wrap."""

import numpy as np

from albert_tf import checkpoints
from albert_tf.models import AlbertClassifier, AlbertMultipleChoice
from tests.conftest import random_inputs, tiny_config

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
