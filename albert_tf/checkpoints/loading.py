"""Load (or only check) any supported checkpoint: the dispatch under `warm_start`.

`load_checkpoint(model, path)` dispatches on `checkpoint_kind(path)` to the original's TF1
loader, ours ("ours"), the Hugging Face one or the TF1 Hub module one (the original's loader on
the module's variables); all are strict the same way and return a `LoadReport`.
`validate_checkpoint` is the same comparison without assigning (names and shapes only), for a
pre-flight check before any output is written.

Example:
    >>> report = load_checkpoint(AlbertClassifier(config, 3), "albert-base-v2-hf",
    ...                          allow_missing=["classifier_head"])
    >>> report.kind, len(report.restored)
    ('hf', 25)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from albert_tf.checkpoints.hf import hf_variable_map, load_hf_checkpoint
from albert_tf.checkpoints.keras_hub import keras_hub_variable_map, load_keras_hub_preset
from albert_tf.checkpoints.kinds import checkpoint_kind
from albert_tf.checkpoints.original import load_original_checkpoint, variable_map
from albert_tf.checkpoints.ours import load_our_checkpoint, our_variable_map
from albert_tf.checkpoints.report import LoadReport
from albert_tf.checkpoints.model_garden import load_model_garden
from albert_tf.checkpoints.tf1_hub import load_tf1_hub_module

LOADERS: dict[str, Callable[..., LoadReport]] = {
    "original": load_original_checkpoint,
    "ours": load_our_checkpoint,
    "hf": load_hf_checkpoint,
    "tf1_hub": load_tf1_hub_module,
    "model_garden": load_model_garden,
    "model_garden_checkpoint": load_model_garden,
    "keras_hub": load_keras_hub_preset,
}


def load_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                    allow_unused: Sequence[str] | None = None,
                    kind: str | None = None) -> LoadReport:
    """Restores `path` (original TF1, ours, a Hugging Face directory or a TF1 Hub module) into
    a built model.

    `allow_missing` takes part names ("classifier_head", "mlm_head", "pooler", …) or name
    globs in the format's own naming; see the format loaders. `kind`: the path's
    `checkpoint_kind` when the caller has it already.
    """
    return LOADERS[kind or checkpoint_kind(path)](model, path, allow_missing=allow_missing,
                                                  allow_unused=allow_unused)


def validate_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                        allow_unused: Sequence[str] | None = None,
                        kind: str | None = None) -> LoadReport:
    """`load_checkpoint` without assigning: raises the same CheckpointMismatchError.

    Reads names and shapes only (the TF checkpoint's shape map, the safetensors header).
    """
    return LOADERS[kind or checkpoint_kind(path)](model, path, allow_missing=allow_missing,
                                                  allow_unused=allow_unused, dry_run=True)


def named_variables(model: Any, kind: str) -> dict[str, tf.Variable]:
    """{name in the format's naming: variable} of a built model, for kind original/ours/hf/
    tf1_hub (a module's variables have the original's names)."""
    if kind in ("original", "tf1_hub", "model_garden", "model_garden_checkpoint"):
        return variable_map(model)
    if kind == "ours":
        return our_variable_map(model)
    if kind == "keras_hub":
        return {n: t.variable for n, t in keras_hub_variable_map(model).items()}
    names, unmapped = hf_variable_map(model)
    return {**{n: t.variable for n, t in names.items()}, **unmapped}
