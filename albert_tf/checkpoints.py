"""Original-release (TF1, name-based) checkpoints: one name table, a strict loader, a writer.

The original's variable names (spec §3) map onto our layers through `NAME_TABLE`. The
loader names every model variable it did not fill, every checkpoint variable nothing
read, and every shape mismatch, and refuses a partial load unless the caller allows it:
a fine-tune that silently starts from random weights is the failure to prevent.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import shutil
import tempfile
from typing import Any, Iterable, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

# (part, TF1 name template, attribute path from the part's owner). `{scope}` stands for
# `group_{g}/inner_group_{k}` (shared) or `layer_{i}/inner_group_{k}` (our per-layer
# sublayers when cross_layer_sharing is not "all"). Parts: see `_part_owners`.
NAME_TABLE: tuple[tuple[str, str, str], ...] = (
    ("embeddings", "bert/embeddings/word_embeddings", "word_embeddings"),
    ("embeddings", "bert/embeddings/token_type_embeddings", "token_type_embeddings"),
    ("embeddings", "bert/embeddings/position_embeddings", "position_embeddings"),
    ("embeddings", "bert/embeddings/LayerNorm/gamma", "layer_norm.gamma"),
    ("embeddings", "bert/embeddings/LayerNorm/beta", "layer_norm.beta"),
    ("projection", "bert/encoder/embedding_hidden_mapping_in/kernel", "kernel"),
    ("projection", "bert/encoder/embedding_hidden_mapping_in/bias", "bias"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/query/kernel", "query.kernel"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/query/bias", "query.bias"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/key/kernel", "key.kernel"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/key/bias", "key.bias"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/value/kernel", "value.kernel"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/self/value/bias", "value.bias"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/output/dense/kernel", "output_dense.kernel"),
    ("attention", "bert/encoder/transformer/{scope}/attention_1/output/dense/bias", "output_dense.bias"),
    ("attention", "bert/encoder/transformer/{scope}/LayerNorm/gamma", "layer_norm.gamma"),
    ("attention", "bert/encoder/transformer/{scope}/LayerNorm/beta", "layer_norm.beta"),
    ("ffn", "bert/encoder/transformer/{scope}/ffn_1/intermediate/dense/kernel", "intermediate.kernel"),
    ("ffn", "bert/encoder/transformer/{scope}/ffn_1/intermediate/dense/bias", "intermediate.bias"),
    ("ffn", "bert/encoder/transformer/{scope}/ffn_1/intermediate/output/dense/kernel", "output_dense.kernel"),
    ("ffn", "bert/encoder/transformer/{scope}/ffn_1/intermediate/output/dense/bias", "output_dense.bias"),
    ("ffn", "bert/encoder/transformer/{scope}/LayerNorm_1/gamma", "layer_norm.gamma"),
    ("ffn", "bert/encoder/transformer/{scope}/LayerNorm_1/beta", "layer_norm.beta"),
    ("pooler", "bert/pooler/dense/kernel", "dense.kernel"),
    ("pooler", "bert/pooler/dense/bias", "dense.bias"),
    ("mlm_head", "cls/predictions/transform/dense/kernel", "dense.kernel"),
    ("mlm_head", "cls/predictions/transform/dense/bias", "dense.bias"),
    ("mlm_head", "cls/predictions/transform/LayerNorm/gamma", "layer_norm.gamma"),
    ("mlm_head", "cls/predictions/transform/LayerNorm/beta", "layer_norm.beta"),
    ("mlm_head", "cls/predictions/output_bias", "output_bias"),
    ("sop_head", "cls/seq_relationship/output_weights", "output_weights"),
    ("sop_head", "cls/seq_relationship/output_bias", "output_bias"),
    # Fine-tuning heads (spec §3.3), created at the root scope by the original.
    ("classifier_head", "output_weights", "output_weights"),
    ("classifier_head", "output_bias", "output_bias"),
    ("squad_v1_head", "cls/squad/output_weights", "output_weights"),
    ("squad_v1_head", "cls/squad/output_bias", "output_bias"),
    ("squad_v2_head", "start_logits/dense/kernel", "start_dense.kernel"),
    ("squad_v2_head", "start_logits/dense/bias", "start_dense.bias"),
    ("squad_v2_head", "end_logits/dense_0/kernel", "end_dense_0.kernel"),
    ("squad_v2_head", "end_logits/dense_0/bias", "end_dense_0.bias"),
    ("squad_v2_head", "end_logits/LayerNorm/gamma", "end_layer_norm.gamma"),
    ("squad_v2_head", "end_logits/LayerNorm/beta", "end_layer_norm.beta"),
    ("squad_v2_head", "end_logits/dense_1/kernel", "end_dense_1.kernel"),
    ("squad_v2_head", "end_logits/dense_1/bias", "end_dense_1.bias"),
    ("squad_v2_head", "answer_class/dense_0/kernel", "answer_dense_0.kernel"),
    ("squad_v2_head", "answer_class/dense_0/bias", "answer_dense_0.bias"),
    ("squad_v2_head", "answer_class/dense_1/kernel", "answer_dense_1.kernel"),  # no bias
)

# Checkpoint entries that are never model weights: optimizer slots and the step (spec §3.4).
SKIPPED_PATTERNS = ("*/adam_m", "*/adam_v", "*/lamb_m", "*/lamb_v", "global_step")

# Parts that belong to the encoder; the rest are heads owned by the root model.
ENCODER_PARTS = ("embeddings", "projection", "attention", "ffn", "pooler")
HEAD_PARTS = tuple(dict.fromkeys(p for p, _, _ in NAME_TABLE if p not in ENCODER_PARTS))

_TF2_MARKER = "_CHECKPOINTABLE_OBJECT_GRAPH"


class CheckpointMismatchError(ValueError):
    """The checkpoint and the model disagree (missing, unused or mis-shaped variables)."""


@dataclasses.dataclass
class LoadReport:
    """What a load did: names restored, model names left as initialised, names unused."""

    path: str
    restored: list[str]
    missing: list[str]
    unused: list[str]
    skipped: list[str]

    def summary(self) -> str:
        text = f"restored {len(self.restored)} variables from {self.path}"
        if self.missing:
            text += f"; {len(self.missing)} left as initialised (allowed): {', '.join(self.missing)}"
        if self.unused:
            text += f"; {len(self.unused)} checkpoint variables unused: {', '.join(self.unused)}"
        return text


def _resolve(owner: Any, path: str) -> tf.Variable:
    obj = owner
    for attribute in path.split("."):
        obj = getattr(obj, attribute)
    return obj


def _encoder_of(model: Any) -> Any:
    from albert_tf.models.encoder import AlbertEncoder

    if isinstance(model, AlbertEncoder):
        return model
    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, AlbertEncoder):
        raise TypeError(f"{type(model).__name__} is not an AlbertEncoder and has no .encoder")
    return encoder


def _part_owners(model: Any) -> dict[str, list[tuple[str, Any]]]:
    """For each part present in `model`: (scope, layer) pairs the table rows resolve against."""
    encoder = _encoder_of(model)
    stack = encoder.transformer
    owners: dict[str, list[tuple[str, Any]]] = {
        "embeddings": [("", encoder.embedding_layer)],
        "attention": list(zip(stack.attention_scopes, stack.attention_layers)),
        "ffn": list(zip(stack.feed_forward_scopes, stack.feed_forward_layers)),
        "pooler": [("", encoder.pooler)],
    }
    if encoder.embedding_projection is not None:
        owners["projection"] = [("", encoder.embedding_projection)]
    for part in HEAD_PARTS:
        head = getattr(model, part, None)
        if head is not None and model is not encoder:
            owners[part] = [("", head)]
    return owners


def variable_map(model: Any) -> dict[str, tf.Variable]:
    """TF1 name → our variable, for every variable the model has (ordered as the table)."""
    owners = _part_owners(model)
    names: dict[str, tf.Variable] = {}
    for part, template, path in NAME_TABLE:
        for scope, layer in owners.get(part, ()):
            if not layer.built:
                raise ValueError(f"layer {layer.name} is not built; call the model once first")
            names[template.format(scope=scope)] = _resolve(layer, path)
    return names


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _known_head_names() -> list[str]:
    return [template for part, template, _ in NAME_TABLE if part in HEAD_PARTS]


def resolve_checkpoint_path(path: str) -> str:
    """A checkpoint prefix from a prefix or a directory holding a `checkpoint` file."""
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"{path}: directory holds no checkpoint")
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"{path}: no checkpoint here (expected {path}.index)")
    return path


def checkpoint_kind(path: str) -> str:
    """"original" for a TF1 name-based ALBERT checkpoint, "tf2" for an object-based one."""
    reader = tf.train.load_checkpoint(resolve_checkpoint_path(path))
    names = reader.get_variable_to_shape_map()
    if _TF2_MARKER in names:
        return "tf2"
    if "bert/embeddings/word_embeddings" in names:
        return "original"
    raise ValueError(f"{path}: neither an original ALBERT checkpoint nor a TF2 object checkpoint")


def is_original_checkpoint(path: str) -> bool:
    """True when `path` (prefix or directory) holds an original-release TF1 checkpoint."""
    return checkpoint_kind(path) == "original"


def _parts_to_patterns(parts: Sequence[str]) -> list[str]:
    """Allow-lists take TF1 name globs or part names ("mlm_head", "pooler", ...)."""
    patterns = []
    table_parts = {p for p, _, _ in NAME_TABLE}
    for item in parts:
        if item in table_parts:
            patterns += [t.replace("{scope}", "*") for p, t, _ in NAME_TABLE if p == item]
        else:
            patterns.append(item)
    return patterns


def load_original_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                             allow_unused: Sequence[str] | None = None) -> LoadReport:
    """Restores an original TF1 checkpoint into an AlbertEncoder, AlbertPretrainer or task model.

    Args:
      model: a built model (call it once first).
      path: checkpoint prefix or directory.
      allow_missing: part names (e.g. "mlm_head", "sop_head") or TF1 name globs of model
        variables the checkpoint may lack; they keep their initial values.
      allow_unused: TF1 name globs of checkpoint variables nothing may read. Default: the
        heads of other tasks (spec §3.2–3.3); anything else unread is an error.
    Raises:
      CheckpointMismatchError naming every missing, unused and mis-shaped variable.
    """
    path = resolve_checkpoint_path(path)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    if _TF2_MARKER in shapes:
        raise CheckpointMismatchError(
            f"{path}: this is a TF2 object-based checkpoint, not an original one; "
            "restore it with tf.train.Checkpoint")
    targets = variable_map(model)
    allow_missing = _parts_to_patterns(allow_missing)
    allow_unused = _known_head_names() if allow_unused is None else _parts_to_patterns(allow_unused)

    skipped = sorted(n for n in shapes if _matches(n, SKIPPED_PATTERNS))
    missing = [n for n in targets if n not in shapes]
    mismatched = [f"{n}: checkpoint {list(shapes[n])} vs model {list(targets[n].shape)}"
                  for n in targets if n in shapes and list(shapes[n]) != list(targets[n].shape)]
    unused = sorted(n for n in shapes if n not in targets and n not in skipped)
    bad_missing = [n for n in missing if not _matches(n, allow_missing)]
    bad_unused = [n for n in unused if not _matches(n, allow_unused)]
    if bad_missing or bad_unused or mismatched:
        lines = [f"{path}: checkpoint does not match {type(model).__name__}"]
        if bad_missing:
            lines.append(f"  model variables missing from the checkpoint ({len(bad_missing)}): "
                         + ", ".join(bad_missing))
        if bad_unused:
            lines.append(f"  checkpoint variables the model has no place for ({len(bad_unused)}): "
                         + ", ".join(bad_unused))
        if mismatched:
            lines.append(f"  shape mismatches ({len(mismatched)}): " + "; ".join(mismatched))
        if bad_missing:
            lines.append("  pass allow_missing=[...] to load the rest anyway (e.g. a head the "
                         "checkpoint never had)")
        raise CheckpointMismatchError("\n".join(lines))

    restored = []
    for name, variable in targets.items():
        if name in shapes:
            variable.assign(reader.get_tensor(name))
            restored.append(name)
    report = LoadReport(path, restored, missing, unused, skipped)
    logging.info("Original checkpoint: %s", report.summary())
    return report


def restore_model_weights(model: Any, path: str, allow_missing: Sequence[str] = ()) -> int:
    """Initialises `model` from an original TF1 checkpoint or one of our training checkpoints.

    Original checkpoints go through the strict loader (`allow_missing` as there); ours are
    matched by variable path, and only the parts named in `allow_missing` may be absent.
    Returns the number of variables restored and logs it.
    """
    if checkpoint_kind(path) == "original":
        return len(load_original_checkpoint(model, path, allow_missing=allow_missing).restored)
    from albert_tf.training.checkpointing import load_model_weights  # training imports models

    loaded, missing = load_model_weights(model, resolve_checkpoint_path(path), allow_missing=True)
    allowed = tuple(allow_missing)
    refused = [m for m in missing if not m.startswith(allowed)] if allowed else missing
    if refused:
        raise CheckpointMismatchError(
            f"{path}: model variables missing from the checkpoint ({len(refused)}): {', '.join(refused)}")
    logging.info("Restored %d variables from %s (%d left as initialised: %s)",
                 len(loaded), path, len(missing), ", ".join(missing) or "none")
    return len(loaded)


def save_original_checkpoint(model: Any, path: str, global_step: int | None = None) -> str:
    """Writes the model's variables under the original's TF1 names and shapes.

    The result is a name-based checkpoint (`path.index`, `path.data-*`) that the original
    release and `tf.train.load_checkpoint` read. Returns the prefix.
    """
    values = {name: np.asarray(variable.numpy()) for name, variable in variable_map(model).items()}
    if global_step is not None:
        values["global_step"] = np.asarray(global_step, np.int64)
    path = write_name_based_checkpoint(values, path)
    logging.info("Wrote original-format checkpoint %s (%d variables)", path, len(values))
    return path


def write_name_based_checkpoint(values: dict[str, np.ndarray], path: str) -> str:
    """Writes arrays under the given TF1 names with a TF1 Saver (V2 format).

    Files are written in a temporary directory and moved into place when complete, and
    the directory's `checkpoint` state file then points at the new prefix.
    """
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    staging = tempfile.mkdtemp(dir=directory, prefix=".ckpt-staging-")
    try:
        prefix = os.path.join(staging, os.path.basename(path))
        graph = tf.Graph()
        with graph.as_default():
            feeds, variables = {}, {}
            for name, value in values.items():
                value = np.asarray(value)
                # Placeholders keep large tables out of the graph proto (2 GB limit).
                placeholder = tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape)
                variables[name] = tf.compat.v1.Variable(placeholder, name=name)
                feeds[placeholder] = value
            saver = tf.compat.v1.train.Saver(variables, write_version=tf.compat.v1.train.SaverDef.V2)
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(tf.compat.v1.global_variables_initializer(), feed_dict=feeds)
                saver.save(session, prefix, write_meta_graph=False, write_state=False)
        for filename in os.listdir(staging):
            os.replace(os.path.join(staging, filename), os.path.join(directory, filename))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _write_checkpoint_state(directory, path)
    return path


def _write_checkpoint_state(directory: str, prefix: str) -> None:
    """Points the directory's `checkpoint` file at `prefix`, as the original's Saver does."""
    state = f'model_checkpoint_path: "{os.path.basename(prefix)}"\n' \
            f'all_model_checkpoint_paths: "{os.path.basename(prefix)}"\n'
    tmp = os.path.join(directory, ".checkpoint.tmp")
    with open(tmp, "w") as f:
        f.write(state)
    os.replace(tmp, os.path.join(directory, "checkpoint"))
