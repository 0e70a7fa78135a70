"""The fine-tuning warm start (`--init_checkpoint`), with a log line that says what was restored.

Faithfulness §3.5, §8.1 `init_checkpoint`: an original TF1 checkpoint (strict name map) or
one of ours (by variable path) is loaded into a task model that has an `.encoder` and its
head part(s) under their checkpoint part names (`classifier_head` of `AlbertClassifier` and
`AlbertMultipleChoice`, `squad_v1_head` / `squad_v2_head` of `AlbertSpanLabeler`). Every
encoder variable must be restored — the head may start fresh — and the log states the counts
in the same words for every task: the original's most reported failure is a fine-tune that
silently started from random weights.

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


def head_parts(model: keras.Model) -> list[str]:
    """The task model's head parts: the checkpoint table's head names it has as attributes."""
    parts = [part for part in checkpoints.HEAD_PARTS if getattr(model, part, None) is not None]
    if not parts:
        raise TypeError(f"{type(model).__name__} has no task head among "
                        f"{', '.join(checkpoints.HEAD_PARTS)}")
    return parts


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
    heads: tuple[str, ...] = ("classifier_head",)

    def summary(self) -> str:
        head = " + ".join(part.replace("_", "-") for part in self.heads)
        text = (f"restored {self.encoder_restored}/{self.encoder_total} encoder variables and "
                f"{self.head_restored}/{self.head_total} {head} variables from "
                f"{self.kind} checkpoint {self.path}")
        if self.missing:
            text += f"; left as initialised: {', '.join(self.missing)}"
        return text


def restore_initial_weights(model: keras.Model, path: str) -> RestoreReport:
    """Loads `path` (original TF1 or ours) into a task model; the head may be absent.

    `model` needs `.encoder` and a head part (`head_parts`). Raises CheckpointMismatchError
    when any encoder variable is missing, so a fine-tune never starts from a partly random
    encoder.
    """
    kind = checkpoints.checkpoint_kind(path)  # "original" or "tf2"
    encoder_ids = {id(v) for v in model.encoder.trainable_variables}
    heads = head_parts(model)
    head_total = sum(len(getattr(model, part).trainable_variables) for part in heads)
    if kind == "original":
        report = checkpoints.load_original_checkpoint(model, path, allow_missing=heads)
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
                           len(restored) - encoder_restored, head_total, missing, tuple(heads))
    logging.info("Warm start: %s", result.summary())
    return result
