"""GLUE head, loss and the warm start, with a log line that says what was restored.

Head and loss (spec §8.4): pooled output → dropout 0.1 (hard-coded, Q20 kept) → logits;
mean cross-entropy, or mean squared error of the single squeezed logit for STS-B.

Warm start (spec §3.5, §8.1 `init_checkpoint`): an original TF1 checkpoint (strict name map)
or one of ours (by variable path). Every encoder variable must be restored — the classifier
head may start fresh — and the log states the counts: the original's most reported failure
is a fine-tune that silently started from random weights.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import keras
import tensorflow as tf
from absl import logging

from albert_tf import checkpoints
from albert_tf.config import AlbertConfig
from albert_tf.glue.tasks import GlueTask
from albert_tf.models import AlbertClassifier
from albert_tf.training.checkpointing import load_model_weights
from albert_tf.training.objective import MeanLossObjective

HEAD_PART = "classifier_head"


def per_example_loss_fn(is_regression: bool) -> Callable:
    """(labels, outputs) → [B] float32 losses of spec §8.4."""
    def loss(labels, outputs):
        logits = tf.cast(outputs["logits"], tf.float32)
        if is_regression:
            return tf.square(tf.squeeze(logits, -1) - tf.cast(labels["label_ids"], tf.float32))
        return tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(labels["label_ids"], tf.int32), logits=logits)
    return loss


def glue_objective(task: GlueTask) -> MeanLossObjective:
    """Mean loss over real examples (`is_real_example`), plus a training accuracy to log."""
    if task.is_regression:
        return MeanLossObjective(per_example_loss_fn(True), example_weight_key="is_real_example")

    def metrics_fn():
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy("accuracy")}

    def update_fn(metrics, labels, outputs):
        metrics["accuracy"].update_state(labels["label_ids"], outputs["logits"],
                                         sample_weight=labels["is_real_example"])

    return MeanLossObjective(per_example_loss_fn(False), metrics_fn, update_fn,
                             example_weight_key="is_real_example")


def classifier_model_fn(config: AlbertConfig | None, num_labels: int,
                        hub_handle: str | None = None) -> Callable[[], keras.Model]:
    """() → AlbertClassifier, from a config or (once [7/8] lands) an exported encoder."""
    if hub_handle:
        return lambda: classifier_from_export(hub_handle, num_labels)
    if config is None:
        raise ValueError("albert_config_file is required unless albert_hub_module_handle is set")
    return lambda: AlbertClassifier(config, num_labels)


def classifier_from_export(handle: str, num_labels: int) -> keras.Model:
    """`--albert_hub_module_handle`: an encoder export (issue [7/8]) plus our classifier head.

    The export's variables are fine-tuned in place (`albert_tf.export.HubEncoder`); its
    config comes from the export's assets.
    """
    from albert_tf.export.loading import HubEncoder  # pylint: disable=import-outside-toplevel

    encoder = HubEncoder(handle, name="encoder")
    logging.info("Encoder from export %s: all %d encoder variables come from the export",
                 handle, len(encoder.trainable_variables))
    return AlbertClassifier(encoder.config, num_labels, encoder=encoder)


@dataclasses.dataclass
class RestoreReport:
    """What a warm start restored: counts of encoder and head variables, names missing."""

    path: str
    kind: str
    encoder_restored: int
    encoder_total: int
    head_restored: int
    head_total: int
    missing: list[str]

    def summary(self) -> str:
        text = (f"restored {self.encoder_restored}/{self.encoder_total} encoder variables and "
                f"{self.head_restored}/{self.head_total} classifier-head variables from "
                f"{self.kind} checkpoint {self.path}")
        if self.missing:
            text += f"; left as initialised: {', '.join(self.missing)}"
        return text


def restore_initial_weights(model: AlbertClassifier, path: str) -> RestoreReport:
    """Loads `path` (original TF1 or ours) into a classifier; the head may be absent.

    Raises CheckpointMismatchError when any encoder variable is missing, so a fine-tune
    never starts from a partly random encoder.
    """
    kind = checkpoints.checkpoint_kind(path)  # "original" or "tf2"
    encoder_ids = {id(v) for v in model.encoder.trainable_variables}
    head_total = len(model.classifier_head.trainable_variables)
    if kind == "original":
        report = checkpoints.load_original_checkpoint(model, path, allow_missing=[HEAD_PART])
        variables = checkpoints.variable_map(model)
        restored = [variables[n] for n in report.restored]
        missing = list(report.missing)
        path = report.path
        kind_name = "original TF1"
    else:
        path = checkpoints.resolve_checkpoint_path(path)
        loaded, missing = load_model_weights(model, path)
        by_path = {v.path: v for v in model.trainable_variables}
        missing_encoder = [k for k in missing if id(by_path.get(k)) in encoder_ids]
        if missing_encoder or not loaded:
            raise checkpoints.CheckpointMismatchError(
                f"{path}: checkpoint lacks {len(missing_encoder)} encoder variable(s): "
                f"{', '.join(missing_encoder) or '(all)'}")
        restored = [by_path[k] for k in loaded]
        kind_name = "albert-tf"
    encoder_restored = sum(id(v) in encoder_ids for v in restored)
    result = RestoreReport(path, kind_name, encoder_restored, len(encoder_ids),
                           len(restored) - encoder_restored, head_total, missing)
    logging.info("Warm start: %s", result.summary())
    return result

