"""The fine-tuning warm start (`--init_checkpoint`), with a log line that says what was restored.

Spec §3.5, §8.1 `init_checkpoint`: an original TF1 checkpoint (strict name map) or one of
ours (by variable path) is loaded into a task model that has an `.encoder` and a
`.classifier_head` (`AlbertClassifier`, `AlbertMultipleChoice`). Every encoder variable must
be restored — the head may start fresh — and the log states the counts: the original's most
reported failure is a fine-tune that silently started from random weights.

Example:
    >>> report = restore_initial_weights(AlbertClassifier(config, 2), "albert_base/model.ckpt")
    >>> report.encoder_restored == report.encoder_total
    True
"""

from __future__ import annotations

import dataclasses

import keras
from absl import logging

from albert_tf import checkpoints
from albert_tf.training.checkpointing import load_model_weights

HEAD_PART = "classifier_head"


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


def restore_initial_weights(model: keras.Model, path: str) -> RestoreReport:
    """Loads `path` (original TF1 or ours) into a task model; the head may be absent.

    `model` needs `.encoder` and `.classifier_head`. Raises CheckpointMismatchError when any
    encoder variable is missing, so a fine-tune never starts from a partly random encoder.
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
