"""Pretraining's records: the original's feature names (faithfulness §6.2) become the
pretrainer's inputs (TF-Hub names) and the objective's labels."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert_tf.pretraining.records import to_model_inputs
from tests.training.synthetic import make_examples


def test_feature_names_map_to_model_inputs():
    examples = {k: tf.constant(v) for k, v in make_examples(2).items()}
    features, labels = to_model_inputs(examples)
    assert set(features) == {"input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions"}
    assert set(labels) == {"masked_lm_ids", "masked_lm_weights", "next_sentence_labels"}
    np.testing.assert_array_equal(features["input_type_ids"], examples["segment_ids"])
    np.testing.assert_array_equal(features["input_word_ids"], examples["input_ids"])
