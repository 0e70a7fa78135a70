"""Our own (TF2) checkpoints as warm starts: model variables keyed by their Keras path.

`training.checkpointing.TrainingCheckpoint` saves `model/<escaped path>` entries beside the
optimizer, step and input position; a warm start reads only the model's trainable variables
(faithfulness §3.5 rule), through the same strict comparison as the other formats. Paths are the
same in every model that holds the encoder (`embeddings/…`, `transformer/…`, `pooler/…`),
heads are under their part name (`mlm_head/…`, `classifier_head/…`).
"""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.model_parts import HEAD_PARTS
from albert_tf.checkpoints.original import TF2_MARKER, resolve_checkpoint_path
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport, compare

_MODEL_PREFIX = "model/"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# Part → glob of its variable paths (heads: their attribute name).
_PART_GLOBS = {
    "embeddings": ("embeddings/*",),
    "projection": ("embedding_projection/*",),
    "attention": ("transformer/*_attention/*",),
    "ffn": ("transformer/*_ffn/*",),
    "pooler": ("pooler/*",),
    **{part: (f"{part}/*",) for part in HEAD_PARTS},
}
_SKIPPED_KEYS = ("seed_states/",)  # dropout RNG states: resumed runs only


def unescape_key(escaped: str) -> str:
    """Inverse of `training.checkpointing.escape_key` ("..": ".", ".S": "/")."""
    out, i = [], 0
    while i < len(escaped):
        pair = escaped[i:i + 2]
        if pair == "..":
            out.append(".")
            i += 2
        elif pair == ".S":
            out.append("/")
            i += 2
        else:
            out.append(escaped[i])
            i += 1
    return "".join(out)


def our_variable_map(model: Any) -> dict[str, tf.Variable]:
    """{variable path: variable} of the model's trainable variables (the checkpoint keys)."""
    from albert_tf.training.checkpointing import keyed_variables  # training imports models

    variables = list(model.trainable_variables)
    return dict(zip(keyed_variables(variables), variables))


def part_patterns(parts: Sequence[str]) -> list[str]:
    """Allow-lists take part names ("classifier_head", "pooler", …) or path globs."""
    patterns: list[str] = []
    for item in parts:
        patterns += list(_PART_GLOBS.get(item, (item,)))
    return patterns


def load_tf2_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                        allow_unused: Sequence[str] | None = None,
                        dry_run: bool = False) -> LoadReport:
    """Restores the model variables of one of our checkpoints into `model`, by variable path.

    Args as `load_original_checkpoint`, with our variable paths as names (e.g.
    `classifier_head/output_weights`); by default the heads of other tasks may be unused.
    `dry_run` compares the object graph's keys and shapes and assigns nothing.
    """
    path = resolve_checkpoint_path(path)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    if TF2_MARKER not in shapes:
        raise CheckpointMismatchError(f"{path}: not one of our (TF2 object-based) checkpoints")
    found, entry, skipped = {}, {}, []
    for name, shape in shapes.items():
        if name.startswith(_MODEL_PREFIX) and name.endswith(_VALUE_SUFFIX):
            key = unescape_key(name[len(_MODEL_PREFIX):-len(_VALUE_SUFFIX)])
            if key.startswith(_SKIPPED_KEYS):
                skipped.append(key)
            else:
                found[key], entry[key] = shape, name
    targets = our_variable_map(model)
    report = compare(
        path, type(model).__name__, {k: v.shape for k, v in targets.items()}, found,
        allow_missing=part_patterns(allow_missing),
        allow_unused=part_patterns(HEAD_PARTS if allow_unused is None else allow_unused),
        skipped=skipped, kind="tf2")
    report.targets = dict(targets)
    if dry_run:
        return report
    for key in report.restored:
        targets[key].assign(reader.get_tensor(entry[key]))
    logging.info("albert-tf checkpoint: %s", report.summary())
    return report
