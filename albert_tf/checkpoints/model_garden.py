"""TF Model Garden's ALBERT (TF2 Hub encoders, object checkpoints) read as checkpoint kinds.

A TF2 Hub encoder (`albert_en_base/3`…, `export_tfhub_lib.export_model`) is a SavedModel whose
`variables/` is an object checkpoint; `saved_model.pb`'s object graph names each variable
(`word_embeddings/embeddings`, `transformer/self_attention/query/kernel`, …) under the same node
id as the checkpoint's object graph, which gives its entry. An object checkpoint of an
`AlbertEncoder` (the converter's `tf.train.Checkpoint(encoder=…)`, or a `BertPretrainerV2`'s
`encoder_network` and `masked_lm`) has no names, only Keras paths (`layer_with_weights-K`),
told apart by what each layer holds. Either way the values are mapped onto the original's
names (`model_garden_names`) and loaded by the original's rules (same strictness, report and
allow-lists). Nothing is run. The config is inferred from the shapes (and the layer count
from the length of `encoder_outputs` in the export's call signature), the SentencePiece
model is the `sp_model_file` asset, `do_lower_case` the variable of that name where there is
one (faithfulness §11.4).

Example:
    >>> source = read_model_garden("albert_en_base_3")
    >>> source.num_layers, os.path.basename(source.spm_model_file)
    (12, '30k-clean.model')
    >>> report = load_model_garden(AlbertEncoder(model_garden_config("albert_en_base_3")),
    ...                            "albert_en_base_3")
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Sequence

import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2

from albert_tf.checkpoints.hf_config import differing_keys
from albert_tf.checkpoints.model_garden_files import is_model_garden_checkpoint
from albert_tf.checkpoints.model_garden_names import (MLM_BIAS, NAMES, QUERY_KERNEL,
                                                      original_shape, to_original)
from albert_tf.checkpoints.original import (TF2_MARKER, known_head_names, part_patterns,
                                            resolve_checkpoint_path, variable_map)
from albert_tf.checkpoints.report import CheckpointFileError, LoadReport, compare
from albert_tf.checkpoints.tf1_hub_files import (ASSETS_DIR, SAVED_MODEL_FILE, is_hub_url,
                                                 is_saved_model, url_refusal, variables_prefix)
from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.runtime import paths

VALUE = "VARIABLE_VALUE"
BERT_BLOCK = re.compile(r"^transformer/layer_\d+/")
_LAYER = re.compile(r"^layer_with_weights-(\d+)$")
# A BertPretrainerV2 MaskedLM child → Model Garden export name (embedding_table: the word
# embeddings, shared).
_MLM_CHILDREN = {("dense", "kernel"): "bert/cls/predictions/transform/dense/kernel",
                 ("dense", "bias"): "bert/cls/predictions/transform/dense/bias",
                 ("layer_norm", "gamma"): "bert/cls/predictions/transform/LayerNorm/gamma",
                 ("layer_norm", "beta"): "bert/cls/predictions/transform/LayerNorm/beta",
                 ("output_bias/bias",): MLM_BIAS}  # stored escaped, output_bias.Sbias
_BLOCK_CHILDREN = {
    "_attention_layer": {f"_{n}_dense": f"self_attention/{n}" for n in ("query", "key", "value")}
    | {"_output_dense": "self_attention/attention_output"},
    "_attention_layer_norm": "self_attention_layer_norm", "_intermediate_dense": "intermediate",
    "_output_dense": "output", "_output_layer_norm": "output_layer_norm"}


@dataclasses.dataclass(frozen=True)
class ModelGardenSource:
    """What a Model Garden export or object checkpoint holds, read from its files."""

    path: str
    kind: str  # "model_garden" (a TF2 Hub export) or "model_garden_checkpoint"
    prefix: str  # the object checkpoint holding the values
    keys: dict[str, str]  # Model Garden name → checkpoint entry
    shapes: dict[str, list[int]]  # Model Garden name → its shape there
    num_layers: int | None  # len(encoder_outputs) of an export's signature
    spm_model_file: str | None  # an export's sp_model_file asset
    do_lower_case: bool | None  # an export's do_lower_case variable

    @property
    def has_mlm(self) -> bool:
        return MLM_BIAS in self.keys


def _object_graph(reader: Any, where: str) -> Any:
    if not reader.has_tensor(TF2_MARKER):
        raise CheckpointFileError(f"{where}: not an object-based (TF2) checkpoint")
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(TF2_MARKER))
    return graph


def _entry(graph: Any, node_id: int) -> str | None:
    """The checkpoint entry of a variable node, None for other nodes."""
    return next((a.checkpoint_key for a in graph.nodes[node_id].attributes if a.name == VALUE),
                None)


def _reader(prefix: str, where: str) -> Any:
    try:
        return tf.compat.v1.train.NewCheckpointReader(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointFileError(f"{where}: unreadable checkpoint ({str(e).splitlines()[0]})") \
            from None


def read_model_garden(path: str) -> ModelGardenSource:
    """Reads an export (a directory with saved_model.pb) or an object checkpoint (prefix or
    directory). Raises CheckpointFileError (one line) for a URL, a BERT encoder, files that
    do not hold a Model Garden ALBERT encoder."""
    path = os.fspath(path)
    if is_hub_url(path):
        raise CheckpointFileError(url_refusal(path))
    source = _read_export(path) if is_saved_model(path) else _read_checkpoint(path)
    bert = sorted(n for n in source.keys if BERT_BLOCK.match(n))
    if bert:
        raise CheckpointFileError(
            f"{path}: a Model Garden BERT encoder ({bert[0]}…: one transformer block per "
            "layer), not ALBERT (one shared block); albert-tf reads ALBERT encoders only")
    if QUERY_KERNEL not in source.keys or "word_embeddings/embeddings" not in source.keys:
        raise CheckpointFileError(f"{path}: not a Model Garden ALBERT encoder (no "
                                  f"{QUERY_KERNEL} / word_embeddings/embeddings)")
    return source


def _read_export(path: str) -> ModelGardenSource:
    proto_file = paths.join(path, SAVED_MODEL_FILE)
    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString(paths.read_bytes(proto_file))
    except DecodeError:
        raise CheckpointFileError(f"{proto_file}: not a SavedModel proto") from None
    if not saved_model.meta_graphs or not saved_model.meta_graphs[0].HasField("object_graph_def"):
        raise CheckpointFileError(f"{proto_file}: a TF1 SavedModel, not a TF2 Hub export")
    meta_graph = saved_model.meta_graphs[0]
    saved = meta_graph.object_graph_def
    prefix = variables_prefix(path)
    if not paths.isfile(prefix + ".index"):
        raise CheckpointFileError(f"{path}: SavedModel without variables "
                                  f"(expected {prefix}.index)")
    reader = _reader(prefix, f"{path}/variables")
    graph = _object_graph(reader, f"{path}/variables")
    entries = reader.get_variable_to_shape_map()
    keys, shapes = {}, {}
    for node_id, node in enumerate(saved.nodes):
        if node.WhichOneof("kind") != "variable" or not node.variable.trainable:
            continue
        name = node.variable.name
        shape = [d.size for d in node.variable.shape.dim]
        entry = _entry(graph, node_id) if node_id < len(graph.nodes) else None
        if entry is None or list(entries.get(entry, [])) != shape:
            raise CheckpointFileError(f"{path}: variables/ do not match {SAVED_MODEL_FILE} "
                                      f"({name})")
        keys[name], shapes[name] = entry, shape
    root = {c.local_name: c.node_id for c in saved.nodes[0].children}
    spm_model_file = do_lower_case = None
    if "sp_model_file" in root and saved.nodes[root["sp_model_file"]].WhichOneof("kind") == "asset":
        index = saved.nodes[root["sp_model_file"]].asset.asset_file_def_index
        candidate = paths.join(path, ASSETS_DIR, meta_graph.asset_file_def[index].filename)
        spm_model_file = candidate if paths.isfile(candidate) else None
    if "do_lower_case" in root:
        entry = _entry(graph, root["do_lower_case"])
        do_lower_case = bool(reader.get_tensor(entry)) if entry else None
    return ModelGardenSource(path, "model_garden", prefix, keys, shapes,
                             _encoder_outputs_length(saved, root), spm_model_file,
                             do_lower_case)


def _encoder_outputs_length(saved: Any, root: dict[str, int]) -> int | None:
    """len(encoder_outputs) in the output structure of the export's `__call__`."""
    if "__call__" not in root:
        return None
    for name in saved.nodes[root["__call__"]].function.concrete_functions:
        output = saved.concrete_functions[name].output_signature
        if output.HasField("dict_value") and "encoder_outputs" in output.dict_value.fields:
            value = output.dict_value.fields["encoder_outputs"]
            return len(value.list_value.values) or len(value.tuple_value.values) or None
    return None


def _read_checkpoint(path: str) -> ModelGardenSource:
    try:
        prefix = resolve_checkpoint_path(path)
    except FileNotFoundError as e:
        raise CheckpointFileError(str(e)) from None
    reader = _reader(prefix, path)
    graph = _object_graph(reader, path)
    if not is_model_garden_checkpoint(reader.get_variable_to_shape_map()):
        raise CheckpointFileError(f"{path}: holds no Model Garden encoder")
    children = [{c.local_name: c.node_id for c in node.children} for node in graph.nodes]
    keys: dict[str, str] = {}

    def take(name: str, node_id: int | None) -> None:
        entry = None if node_id is None else _entry(graph, node_id)
        if entry is not None:
            keys[name] = entry

    encoders = sorted({i for i, c in enumerate(children) if any(
        _LAYER.match(n) and "_attention_layer" in children[j] for n, j in c.items())})
    if len(encoders) != 1:
        raise CheckpointFileError(f"{path}: {len(encoders)} Model Garden encoders in one "
                                  "checkpoint; expected one")
    layers = sorted((int(_LAYER.match(n).group(1)), j) for n, j in children[encoders[0]].items()
                    if _LAYER.match(n))
    embeddings = iter(("word_embeddings", "position_embedding", "type_embeddings"))
    blocks = 0
    for _, j in layers:
        c = children[j]
        if "embeddings" in c:
            take(f"{next(embeddings, 'extra_embeddings')}/embeddings", c["embeddings"])
        elif "gamma" in c:
            for w in ("gamma", "beta"):
                take(f"embeddings/layer_norm/{w}", c.get(w))
        elif "_attention_layer" in c:
            scope = "transformer/" if not blocks else f"transformer/layer_{blocks}/"
            blocks += 1
            for child, inner in _BLOCK_CHILDREN.items():
                pairs = inner.items() if isinstance(inner, dict) else [(None, inner)]
                for grandchild, name in pairs:
                    node = children[c[child]].get(grandchild) if grandchild else c.get(child)
                    for w in ("kernel", "bias", "gamma", "beta"):
                        take(f"{scope}{name}/{w}", children[node].get(w) if node else None)
        elif "kernel" in c:
            layer = "embedding_projection" if not blocks else "pooler_transform"
            for w in ("kernel", "bias"):
                take(f"{layer}/{w}", c.get(w))
    if blocks > 1:  # a BertEncoder's per-layer blocks: name them as its exports do
        keys = {("transformer/layer_0/" + n[len("transformer/"):]
                 if n.startswith("transformer/") and not BERT_BLOCK.match(n) else n): k
                for n, k in keys.items()}
    mlm = [c["masked_lm"] for c in children if "masked_lm" in c]
    if mlm:
        for path_in, name in _MLM_CHILDREN.items():
            node = mlm[0]
            for step in path_in:
                node = children[node].get(step) if node is not None else None
            take(name, node)
    entries = reader.get_variable_to_shape_map()
    return ModelGardenSource(path, "model_garden_checkpoint", prefix, keys,
                             {n: list(entries[k]) for n, k in keys.items()}, None, None, None)


def inferred_config(source: ModelGardenSource) -> dict[str, Any]:
    """The config fields the variables' shapes (and an export's signature) determine."""
    shapes = source.shapes
    vocab, embedding = shapes["word_embeddings/embeddings"]
    hidden, heads, _ = shapes[QUERY_KERNEL]
    values = {"vocab_size": vocab, "embedding_size": embedding, "hidden_size": hidden,
              "num_attention_heads": heads,
              "intermediate_size": shapes["transformer/intermediate/kernel"][1],
              "num_hidden_groups": 1, "inner_group_num": 1}
    if "position_embedding/embeddings" in shapes:
        values["max_position_embeddings"] = shapes["position_embedding/embeddings"][0]
    if "type_embeddings/embeddings" in shapes:
        values["type_vocab_size"] = shapes["type_embeddings/embeddings"][0]
    if source.num_layers is not None:
        values["num_hidden_layers"] = source.num_layers
    return values


def model_garden_config(path: str, albert_config_file: str | None = None) -> AlbertConfig:
    """The config inferred from the export (`inferred_config`; the rest is AlbertConfig's
    defaults: gelu, no dropout, as Model Garden's AlbertEncoderConfig); a config file given
    must agree on every inferred field and is then used. An object checkpoint carries no
    layer count: it needs the file. Raises ConfigError / CheckpointFileError, one line."""
    source = read_model_garden(path)
    values = inferred_config(source)
    if albert_config_file:
        given = AlbertConfig.from_json_file(albert_config_file)
        differing = differing_keys(given.to_dict(), values, tuple(values))
        if differing:
            raise ConfigError(f"{albert_config_file} and {path} disagree "
                              f"({'; '.join(differing)}); omit --albert_config_file or pass "
                              "the one of this model")
        return given
    if source.num_layers is None:
        raise ConfigError(f"{path}: a Model Garden checkpoint carries no layer count; pass "
                          "--albert_config_file")
    return AlbertConfig(**values)


def load_model_garden(model: Any, path: str, allow_missing: Sequence[str] = (),
                      allow_unused: Sequence[str] | None = None,
                      dry_run: bool = False) -> LoadReport:
    """Restores a Model Garden export or object checkpoint into a built model, under the
    original's names and rules (`load_original_checkpoint`'s allow-lists and strictness)."""
    source = read_model_garden(path)
    original_of = {name: NAMES.get(name, name) for name in source.keys}
    found = {original_of[n]: original_shape(n, s) for n, s in source.shapes.items()}
    targets = variable_map(model)
    report = compare(
        path, type(model).__name__, {n: v.shape for n, v in targets.items()}, found,
        allow_missing=part_patterns(allow_missing),
        allow_unused=known_head_names() if allow_unused is None else part_patterns(allow_unused),
        kind=source.kind)
    report.targets, report.path, report.kind = targets, path, source.kind
    if dry_run:
        return report
    name_of = {original: name for name, original in original_of.items()}
    reader = _reader(source.prefix, path)
    for name in report.restored:
        mg_name = name_of[name]
        targets[name].assign(to_original(mg_name, reader.get_tensor(source.keys[mg_name])))
    return report
