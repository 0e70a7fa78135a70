"""The fine-tuning warm start (`--init_checkpoint`), with a log line that says what was restored.

Faithfulness §3.5, §8.1 `init_checkpoint`: an original TF1 checkpoint or a Hugging Face
directory (strict name maps) or one of ours (by variable path) is loaded through
`checkpoints.load_checkpoint` into a task model that has an `.encoder` and its
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
    """Loads `path` (original TF1, Hugging Face or ours) into a task model; the head may be absent.

    `model` needs `.encoder` and a head part (`head_parts`). Raises CheckpointMismatchError
    when any encoder variable is missing, so a fine-tune never starts from a partly random
    encoder.
    """
    kind = checkpoints.checkpoint_kind(path)  # "original", "tf2" (ours) or "hf"
    encoder_ids = {id(v) for v in model.encoder.trainable_variables}
    heads = head_parts(model)
    head_total = sum(len(getattr(model, part).trainable_variables) for part in heads)
    if kind in ("original", "hf"):
        report = checkpoints.load_checkpoint(model, path, allow_missing=heads)
        missing = list(report.missing)
        kind_name = {"original": "original TF1", "hf": "Hugging Face"}[kind]
    else:
        report = checkpoints.load_checkpoint(model, path, allow_missing=["*"])
        missing = list(report.missing)
        missing_encoder = [k for k in missing if id(report.targets[k]) in encoder_ids]
        if missing_encoder or not report.restored:
            raise checkpoints.CheckpointMismatchError(
                f"{report.path}: checkpoint lacks {len(missing_encoder)} encoder variable(s): "
                f"{', '.join(missing_encoder) or '(all)'}")
        kind_name = "albert-tf"
    path = report.path
    restored = [report.targets[n] for n in report.restored]
    encoder_restored = sum(id(v) in encoder_ids for v in restored)
    result = RestoreReport(path, kind_name, encoder_restored, len(encoder_ids),
                           len(restored) - encoder_restored, head_total, missing, tuple(heads))
    logging.info("Warm start: %s", result.summary())
    return result
