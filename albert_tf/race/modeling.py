"""RACE's model and objective: four options scored by one classifier, softmax over them.

Head and loss (faithfulness §10.4): each option's pooled output → dropout (--dropout_prob) →
one score; the four scores are the logits of a mean softmax cross-entropy
(`finetuning.objective.classification_objective`, shared with GLUE), logged with accuracy.
"""

from __future__ import annotations

import keras

from albert_tf.config import AlbertConfig
from albert_tf.finetuning.objective import classification_objective
from albert_tf.models import AlbertMultipleChoice
from albert_tf.race.examples import NUM_OPTIONS
from albert_tf.training.objective import MeanLossObjective


def multiple_choice(config: AlbertConfig, dropout_prob: float,
                    encoder: keras.layers.Layer | None = None) -> AlbertMultipleChoice:
    """The option scorer over `encoder`, or a fresh encoder."""
    return AlbertMultipleChoice(config, NUM_OPTIONS, dropout_prob, encoder=encoder)


def race_objective() -> MeanLossObjective:
    """Mean cross-entropy over the questions (all real: `is_real_example` is 1), with accuracy."""
    return classification_objective()
