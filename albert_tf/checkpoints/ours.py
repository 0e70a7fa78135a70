"""Our own checkpoint format ("ours"): its key layout, and its strict loader for warm starts.

The layout is defined here once: a variable is keyed by its Keras path (`keyed_variables`),
and `tf.train.Checkpoint(model=...)` stores it as `model/<escaped key>/.ATTRIBUTES/
VARIABLE_VALUE` (`entry_name`). `training.checkpointing.TrainingCheckpoint` writes the
`model/…` entries beside the optimizer, step and input position; a warm start reads only
the model's trainable variables
(faithfulness §3.5 rule), through the same strict comparison as the other formats. Paths are the
same in every model that holds the encoder (`embeddings/…`, `transformer/…`, `pooler/…`),
heads are under their part name (`mlm_head/…`, `classifier_head/…`).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.model_parts import HEAD_PARTS
from albert_tf.checkpoints.original import TF2_MARKER, checkpoint_reader, resolve_checkpoint_path
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport, compare

MODEL_PREFIX = "model/"  # the tf.train.Checkpoint attribute the model's variables are under
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"  # where tf.train.Checkpoint stores a value
_SEED_STATE = "seed_generator_state"
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


def _tf_variable(variable: Any) -> tf.Variable:
    return variable.value if isinstance(variable, keras.Variable) else variable


def keyed_variables(variables: Iterable[Any]) -> dict[str, tf.Variable]:
    """{checkpoint key: tf.Variable}: the Keras path, or `seed_states/<i>` for RNG states.

    The path is the same in every model that holds the encoder, so a GLUE or SQuAD run can
    warm-start from a pretraining checkpoint by name; dropout RNG states are keyed by order.
    """
    keyed: dict[str, tf.Variable] = {}
    seeds = 0
    for variable in variables:
        path = getattr(variable, "path", None) or variable.name
        if _SEED_STATE in path:
            key, seeds = f"seed_states/{seeds}", seeds + 1
        else:
            key, n = path, 1
            while key in keyed:  # never expected; keeps keys unique rather than overwriting
                key, n = f"{path}#{n}", n + 1
        keyed[key] = _tf_variable(variable)
    return keyed


def escape_key(key: str) -> str:
    """The escaping tf.train.Checkpoint applies to dict keys ("." → "..", "/" → ".S")."""
    return key.replace(".", "..").replace("/", ".S")


def unescape_key(escaped: str) -> str:
    """Inverse of `escape_key` ("..": ".", ".S": "/")."""
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


def entry_name(key: str) -> str:
    """The checkpoint entry of a model variable's key, e.g. `classifier_head/output_bias` →
    `model/classifier_head.Soutput_bias/.ATTRIBUTES/VARIABLE_VALUE`."""
    return f"{MODEL_PREFIX}{escape_key(key)}{VALUE_SUFFIX}"


def model_entries(names: Iterable[str]) -> dict[str, str]:
    """{variable key: entry name} of the model entries among a checkpoint's entry names."""
    return {unescape_key(name[len(MODEL_PREFIX):-len(VALUE_SUFFIX)]): name for name in names
            if name.startswith(MODEL_PREFIX) and name.endswith(VALUE_SUFFIX)}


def our_variable_map(model: Any) -> dict[str, tf.Variable]:
    """{variable path: variable} of the model's trainable variables (the checkpoint keys)."""
    variables = list(model.trainable_variables)
    return dict(zip(keyed_variables(variables), variables))


def part_patterns(parts: Sequence[str]) -> list[str]:
    """Allow-lists take part names ("classifier_head", "pooler", …) or path globs."""
    patterns: list[str] = []
    for item in parts:
        patterns += list(_PART_GLOBS.get(item, (item,)))
    return patterns


def load_our_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                        allow_unused: Sequence[str] | None = None,
                        dry_run: bool = False) -> LoadReport:
    """Restores the model variables of one of our checkpoints into `model`, by variable path.

    Args as `load_original_checkpoint`, with our variable paths as names (e.g.
    `classifier_head/output_weights`); by default the heads of other tasks may be unused.
    `dry_run` compares the object graph's keys and shapes and assigns nothing.
    """
    path = resolve_checkpoint_path(path)
    reader = checkpoint_reader(path)
    shapes = reader.get_variable_to_shape_map()
    if TF2_MARKER not in shapes:
        raise CheckpointMismatchError(f"{path}: not one of our (TF2 object-based) checkpoints")
    found, entry, skipped = {}, {}, []
    for key, name in model_entries(shapes).items():
        if key.startswith(_SKIPPED_KEYS):
            skipped.append(key)
        else:
            found[key], entry[key] = shapes[name], name
    targets = our_variable_map(model)
    report = compare(
        path, type(model).__name__, {k: v.shape for k, v in targets.items()}, found,
        allow_missing=part_patterns(allow_missing),
        allow_unused=part_patterns(HEAD_PARTS if allow_unused is None else allow_unused),
        skipped=skipped, kind="ours")
    report.targets = dict(targets)
    if dry_run:
        return report
    for key in report.restored:
        targets[key].assign(reader.get_tensor(entry[key]))
    logging.info("albert-tf checkpoint: %s", report.summary())
    return report
