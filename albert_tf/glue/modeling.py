"""GLUE's model and objective: the classifier, and the STS-B regression loss.

Head and loss (faithfulness §8.4): pooled output → dropout 0.1 (hard-coded, Q20 kept) → logits;
mean cross-entropy (`finetuning.objective.classification_objective`, shared with RACE), or,
for STS-B, mean squared error of the single squeezed logit. The model comes from a config or
an encoder export (`checkpoints.model_source.task_model_fn`); the warm start is
`checkpoints.warm_start`.
"""

from __future__ import annotations

from typing import Callable

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.checkpoints.model_source import task_model_fn
from albert_tf.finetuning.objective import classification_objective
from albert_tf.glue.tasks import GlueTask
from albert_tf.models import AlbertClassifier
from albert_tf.training.objective import MeanLossObjective


def squared_error(labels, outputs) -> tf.Tensor:
    """[B] float32 (squeezed logit − label)², STS-B's per-example loss (faithfulness §8.4)."""
    logits = tf.cast(outputs["logits"], tf.float32)
    return tf.square(tf.squeeze(logits, -1) - tf.cast(labels["label_ids"], tf.float32))


def glue_objective(task: GlueTask) -> MeanLossObjective:
    """Mean loss over real examples (`is_real_example`); classification also logs accuracy."""
    if task.is_regression:
        return MeanLossObjective(squared_error, example_weight_key="is_real_example")
    return classification_objective("is_real_example")


def classifier_model_fn(config: AlbertConfig, num_labels: int,
                        hub_handle: str | None = None) -> Callable[[], keras.Model]:
    """() → AlbertClassifier over a fresh encoder, or over the export `hub_handle`."""
    return task_model_fn(lambda cfg, encoder: AlbertClassifier(cfg, num_labels, encoder=encoder),
                         config, hub_handle)
