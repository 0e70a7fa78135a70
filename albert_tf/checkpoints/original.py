"""Original-release (TF1, name-based) checkpoints: one name table, a strict loader, a writer.

The original's variable names (faithfulness §3) map onto our layers through `NAME_TABLE`.
The loader names every model variable it did not fill, every checkpoint variable nothing
read, and every shape mismatch (`report.compare`), and refuses a partial load unless the
caller allows it.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_directory, atomic_file
from albert_tf.checkpoints.model_parts import HEAD_PARTS, check_built, part_owners, resolve
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport, compare, matches

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
    # Fine-tuning heads (faithfulness §3.3), created at the root scope by the original.
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

# Checkpoint entries that are never model weights: optimizer slots and the step (§3.4).
SKIPPED_PATTERNS = ("*/adam_m", "*/adam_v", "*/lamb_m", "*/lamb_v", "global_step")

TF2_MARKER = "_CHECKPOINTABLE_OBJECT_GRAPH"


def variable_map(model: Any) -> dict[str, tf.Variable]:
    """TF1 name → our variable, for every variable the model has (ordered as the table)."""
    owners = part_owners(model)
    names: dict[str, tf.Variable] = {}
    for part, template, path in NAME_TABLE:
        for scope, layer in owners.get(part, ()):
            check_built(layer)
            names[template.format(scope=scope)] = resolve(layer, path)
    return names


def known_head_names() -> list[str]:
    """TF1 names of every head: a checkpoint may hold another task's head, unused."""
    return [template for part, template, _ in NAME_TABLE if part in HEAD_PARTS]


def part_patterns(parts: Sequence[str]) -> list[str]:
    """Allow-lists take TF1 name globs or part names ("mlm_head", "pooler", ...)."""
    patterns = []
    table_parts = {p for p, _, _ in NAME_TABLE}
    for item in parts:
        if item in table_parts:
            patterns += [t.replace("{scope}", "*") for p, t, _ in NAME_TABLE if p == item]
        else:
            patterns.append(item)
    return patterns


def resolve_checkpoint_path(path: str) -> str:
    """A checkpoint prefix from a prefix or a directory holding a `checkpoint` file."""
    path = os.fspath(path)
    # The prefix first: on some file systems (ram://) a prefix of files reads as a directory.
    if tf.io.gfile.exists(path + ".index"):
        return path
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"{path}: directory holds no checkpoint")
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"{path}: no checkpoint here (expected {path}.index)")
    return path


def checkpoint_reader(path: str) -> Any:
    """A `tf.train.CheckpointReader` of the checkpoint at `path` (prefix or directory).

    Unlike `tf.train.load_checkpoint`, a prefix is never taken for a directory (it is on
    ram://, where `isdir(prefix)` holds when files start with it)."""
    return tf.compat.v1.train.NewCheckpointReader(resolve_checkpoint_path(path))


def load_original_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                             allow_unused: Sequence[str] | None = None,
                             dry_run: bool = False) -> LoadReport:
    """Restores an original TF1 checkpoint into an AlbertEncoder, AlbertPretrainer or task model.

    Args:
      model: a built model (call it once first).
      path: checkpoint prefix or directory.
      allow_missing: part names (e.g. "mlm_head", "sop_head") or TF1 name globs of model
        variables the checkpoint may lack; they keep their initial values.
      allow_unused: TF1 name globs of checkpoint variables nothing may read. Default: the
        heads of other tasks (§3.2–3.3); anything else unread is an error.
      dry_run: compare names and shapes only (the checkpoint's shape map); assign nothing.
    Raises:
      CheckpointMismatchError naming every missing, unused and mis-shaped variable.
    """
    path = resolve_checkpoint_path(path)
    reader = checkpoint_reader(path)
    shapes = reader.get_variable_to_shape_map()
    if TF2_MARKER in shapes:
        raise CheckpointMismatchError(
            f"{path}: this is a TF2 object-based checkpoint, not an original one; "
            "restore it with checkpoints.load_checkpoint")
    targets = variable_map(model)
    report = compare(
        path, type(model).__name__, {n: v.shape for n, v in targets.items()}, shapes,
        allow_missing=part_patterns(allow_missing),
        allow_unused=known_head_names() if allow_unused is None else part_patterns(allow_unused),
        skipped=[n for n in shapes if matches(n, SKIPPED_PATTERNS)], kind="original")
    report.targets = targets
    if dry_run:
        return report
    for name in report.restored:
        targets[name].assign(reader.get_tensor(name))
    logging.info("Original checkpoint: %s", report.summary())
    return report


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

    Files are written in a staging directory and moved into place when complete
    (`atomic_directory`'s merge), and the directory's `checkpoint` state file then points at
    the new prefix.
    """
    path = paths.absolute(path)
    directory = os.path.dirname(path)
    with atomic_directory(directory, existing="merge", what="checkpoint") as staging:
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
    _write_checkpoint_state(directory, path)
    return path


def _write_checkpoint_state(directory: str, prefix: str) -> None:
    """Points the directory's `checkpoint` file at `prefix`, as the original's Saver does."""
    state = f'model_checkpoint_path: "{os.path.basename(prefix)}"\n' \
            f'all_model_checkpoint_paths: "{os.path.basename(prefix)}"\n'
    with atomic_file(os.path.join(directory, "checkpoint")) as f:
        f.write(state)
