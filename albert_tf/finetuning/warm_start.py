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
    # Missing names of encoder parts the model never reads (the span labeler's pooler).
    unread_missing: list[str] = dataclasses.field(default_factory=list)
    model_name: str = ""

    def summary(self) -> str:
        head = " + ".join(part.replace("_", "-") for part in self.heads)
        text = (f"restored {self.encoder_restored}/{self.encoder_total} encoder variables and "
                f"{self.head_restored}/{self.head_total} {head} variables from "
                f"{self.kind} checkpoint {self.path}")
        if self.missing:
            text += f"; left as initialised: {', '.join(self.missing)}"
        if self.unread_missing:
            text += (f"; not in the checkpoint and never read by {self.model_name}: "
                     f"{', '.join(self.unread_missing)}")
        return text


def restore_initial_weights(model: keras.Model, path: str,
                            dry_run: bool = False) -> RestoreReport:
    """Loads `path` (original TF1, Hugging Face or ours) into a task model; the head may be absent.

    `model` needs `.encoder` and a head part (`head_parts`). Raises CheckpointMismatchError
    when any encoder variable the model reads is missing, so a fine-tune never starts from a
    partly random encoder. `dry_run` compares names and shapes only and assigns nothing
    (`check_initial_weights`).
    """
    kind = checkpoints.checkpoint_kind(path)  # "original", "tf2" (ours) or "hf"
    load = checkpoints.validate_checkpoint if dry_run else checkpoints.load_checkpoint
    encoder_ids = {id(v) for v in model.encoder.trainable_variables}
    unread_ids = _unread_ids(model)
    heads = head_parts(model)
    head_total = sum(len(getattr(model, part).trainable_variables) for part in heads)
    if kind in ("original", "hf"):
        report = load(model, path, allow_missing=heads)
        kind_name = {"original": "original TF1", "hf": "Hugging Face"}[kind]
    else:
        report = load(model, path, allow_missing=["*"])
        missing_encoder = [k for k in report.missing if id(report.targets[k]) in encoder_ids
                           and id(report.targets[k]) not in unread_ids]
        if missing_encoder or not report.restored:
            raise checkpoints.CheckpointMismatchError(
                f"{report.path}: checkpoint lacks {len(missing_encoder)} encoder variable(s): "
                f"{', '.join(missing_encoder) or '(all)'}")
        kind_name = "albert-tf"
    restored = [report.targets[n] for n in report.restored]
    encoder_restored = sum(id(v) in encoder_ids for v in restored)
    result = RestoreReport(
        report.path, kind_name, encoder_restored, len(encoder_ids),
        len(restored) - encoder_restored, head_total,
        [n for n in report.missing if id(report.targets[n]) not in unread_ids], tuple(heads),
        [n for n in report.missing if id(report.targets[n]) in unread_ids], type(model).__name__)
    if not dry_run:
        logging.info("Warm start: %s", result.summary())
    return result


def check_initial_weights(model: keras.Model, path: str) -> RestoreReport:
    """`restore_initial_weights` without assigning: the same errors, from names and shapes."""
    return restore_initial_weights(model, path, dry_run=True)


def _unread_ids(model: keras.Model) -> set[int]:
    """ids of the variables of encoder parts the model never reads (`unread_parts`)."""
    owners = checkpoints.part_owners(model)
    return {id(w) for part in checkpoints.unread_parts(model)
            for _, layer in owners.get(part, ()) for w in layer.weights}
