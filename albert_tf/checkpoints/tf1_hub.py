"""The original's TF1 Hub modules (`google/albert_{base,…}/1–3`) read as a checkpoint kind.

A module written by the original's export_to_tfhub.py (faithfulness §11.1) is a TF1 SavedModel
with a `tfhub_module.pb` marker: two MetaGraphs (tag sets `{}` and `{"train"}`), each with the
signatures `tokens`, `sop`, `mlm` and `tokenization_info`; `variables/` is a name-based TF1
checkpoint under the original's names (`bert/…`, `cls/…`, §3.1–3.2); `assets/` holds
`albert_config.json` and the SentencePiece model. The graph is not run: its computation is the
original's modeling.py, which our encoder reproduces (§2), so the module's weights are loaded
into our model by the original-checkpoint loader, as strictly and with the same report and
allow-lists as a tarball checkpoint. The MetaGraphs are read for `tokenization_info` only: the
SentencePiece model's asset and `do_lower_case` (§7.2, Q21).

Example:
    >>> module = read_tf1_hub_module("albert_base_3")
    >>> module.spm_model_file, module.do_lower_case
    ('albert_base_3/assets/30k-clean.model', True)
    >>> report = load_tf1_hub_module(AlbertPretrainer(module_config("albert_base_3")),
    ...                              "albert_base_3")
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

from albert_tf.runtime import paths
from albert_tf.checkpoints.hf_config import config_disagreement
from albert_tf.checkpoints.original import load_original_checkpoint
from albert_tf.checkpoints.report import CheckpointFileError, CheckpointMismatchError, LoadReport
from albert_tf.checkpoints.tf1_hub_files import (ASSETS_DIR, CONFIG_ASSET, MODULE_FORMAT,
                                                 MODULE_MARKER, SAVED_MODEL_FILE, asset_path,
                                                 is_hub_url, is_tf1_hub_module, module_format,
                                                 url_refusal, variables_prefix)
from albert_tf.config import AlbertConfig, ConfigError

# tf.compat.v1.saved_model.ASSETS_KEY: tensorflow_hub keeps a module's assets in this
# collection (AssetFileDef protos packed in Any); TF's own Builder in `asset_file_def`.
ASSETS_COLLECTION = "saved_model_assets"
TOKENIZATION_SIGNATURE = "tokenization_info"


@dataclasses.dataclass(frozen=True)
class TF1HubModule:
    """What a TF1 Hub module directory holds, read from its files (no graph is run)."""

    directory: str
    tag_sets: tuple[tuple[str, ...], ...]  # each MetaGraph's tags, sorted
    signatures: tuple[str, ...]  # of the inference MetaGraph (tag set {}), else the first
    variables: str  # prefix of the name-based checkpoint
    config_file: str | None  # assets/albert_config.json when present
    spm_model_file: str | None  # tokenization_info's vocab_file asset (a SentencePiece model)
    do_lower_case: bool | None  # tokenization_info's, None without that signature


def read_tf1_hub_module(path: str) -> TF1HubModule:
    """Reads the module's marker, MetaGraphs and files. Raises CheckpointFileError (one line
    naming the file) for a URL, a missing marker or SavedModel, an unknown module format, or
    a module without `variables/variables.index`."""
    path = os.fspath(path)
    if is_hub_url(path):
        raise CheckpointFileError(url_refusal(path))
    if not is_tf1_hub_module(path):
        raise CheckpointFileError(f"{path}: not a TF1 Hub module (no {MODULE_MARKER})")
    try:
        found = module_format(path)
    except ValueError as e:
        raise CheckpointFileError(str(e)) from None
    if found != MODULE_FORMAT:
        raise CheckpointFileError(f"{path}/{MODULE_MARKER}: module format {found}; only format "
                                  f"{MODULE_FORMAT} (a TF1 Hub SavedModel) is known")
    proto_file = os.path.join(path, SAVED_MODEL_FILE)
    if not paths.isfile(proto_file):
        raise CheckpointFileError(f"{path}: TF1 Hub module without {SAVED_MODEL_FILE}")
    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString(paths.read_bytes(proto_file))
    except DecodeError:
        raise CheckpointFileError(f"{proto_file}: not a SavedModel proto") from None
    if not saved_model.meta_graphs:
        raise CheckpointFileError(f"{proto_file}: holds no MetaGraph")
    prefix = variables_prefix(path)
    if not paths.isfile(prefix + ".index"):
        raise CheckpointFileError(f"{path}: TF1 Hub module without variables "
                                  f"(expected {prefix}.index)")
    graphs = sorted(saved_model.meta_graphs, key=lambda g: len(g.meta_info_def.tags))
    inference = graphs[0]  # the empty tag set when present
    info = next((g for g in graphs if TOKENIZATION_SIGNATURE in g.signature_def), None)
    spm_model_file, do_lower_case = _tokenization_info(path, info) if info else (None, None)
    if spm_model_file is None:
        spm_model_file = _only_spm_asset(path)
    config_file = asset_path(path, CONFIG_ASSET)
    return TF1HubModule(
        path, tuple(tuple(sorted(g.meta_info_def.tags)) for g in saved_model.meta_graphs),
        tuple(sorted(inference.signature_def)), prefix,
        config_file if paths.isfile(config_file) else None, spm_model_file, do_lower_case)


def _assets(meta_graph: Any) -> dict[str, str]:
    """{tensor name: asset file name} of a MetaGraph, from both places assets are recorded."""
    assets = {a.tensor_info.name: a.filename for a in meta_graph.asset_file_def}
    if ASSETS_COLLECTION in meta_graph.collection_def:
        for packed in meta_graph.collection_def[ASSETS_COLLECTION].any_list.value:
            asset = meta_graph_pb2.AssetFileDef()
            packed.Unpack(asset)
            assets[asset.tensor_info.name] = asset.filename
    return assets


def _constant(meta_graph: Any, tensor_name: str) -> Any:
    """The value of the Const op behind `tensor_name` (through Identity ops), else None."""
    nodes = {node.name: node for node in meta_graph.graph_def.node}
    node = nodes.get(tensor_name.split(":")[0])
    while node is not None and node.op == "Identity" and node.input:
        node = nodes.get(node.input[0].lstrip("^").split(":")[0])
    if node is None or node.op != "Const":
        return None
    return tf.make_ndarray(node.attr["value"].tensor)


def _tokenization_info(path: str, meta_graph: Any) -> tuple[str | None, bool | None]:
    """(SentencePiece model, do_lower_case) of the `tokenization_info` signature: `vocab_file`
    is an asset tensor (hub stores its file name beside the graph; the Const itself holds a
    placeholder), `do_lower_case` a bool constant."""
    outputs = meta_graph.signature_def[TOKENIZATION_SIGNATURE].outputs
    spm_model_file = do_lower_case = None
    if "vocab_file" in outputs:
        name = outputs["vocab_file"].name
        filename = _assets(meta_graph).get(name)
        if filename is None:  # an asset path written into the graph: its file name
            value = _constant(meta_graph, name)
            filename = os.path.basename(value.item().decode("utf-8")) if value is not None else None
        if filename and paths.isfile(asset_path(path, filename)):
            spm_model_file = asset_path(path, filename)
    if "do_lower_case" in outputs:
        value = _constant(meta_graph, outputs["do_lower_case"].name)
        do_lower_case = bool(value.item()) if value is not None else None
    return spm_model_file, do_lower_case


def _only_spm_asset(path: str) -> str | None:
    """The one `*.model` file in assets/, for a module without `tokenization_info`."""
    directory = os.path.join(path, ASSETS_DIR)
    models = sorted(n for n in paths.listdir(directory) if n.endswith(".model")) \
        if paths.isdir(directory) else []
    return asset_path(path, models[0]) if len(models) == 1 else None


def module_config(path: str, albert_config_file: str | None = None) -> AlbertConfig:
    """The module's `assets/albert_config.json`; a config file given too must describe the same
    model (field by field, `hf_config.config_disagreement`). A module without the asset needs
    the file. Raises ConfigError / CheckpointFileError, one line naming the files."""
    module = read_tf1_hub_module(path)
    given = AlbertConfig.from_json_file(albert_config_file) if albert_config_file else None
    if module.config_file is None:
        if given is None:
            raise ConfigError(f"{path}: the TF1 Hub module carries no {ASSETS_DIR}/"
                              f"{CONFIG_ASSET}; pass --albert_config_file")
        return given
    config = AlbertConfig.from_json_file(module.config_file)
    if given is not None:
        differing = config_disagreement(given, config)
        if differing:
            raise ConfigError(f"{albert_config_file} and {module.config_file} disagree "
                              f"({'; '.join(differing)}); omit --albert_config_file to use the "
                              "module's")
    return config


def load_tf1_hub_module(model: Any, path: str, allow_missing: Sequence[str] = (),
                        allow_unused: Sequence[str] | None = None,
                        dry_run: bool = False) -> LoadReport:
    """Restores a TF1 Hub module's variables into a built model: `load_original_checkpoint`
    on `variables/variables` (the same names, allow-lists and strictness); the report and
    its errors name the module directory."""
    module = read_tf1_hub_module(path)
    try:
        report = load_original_checkpoint(model, module.variables, allow_missing=allow_missing,
                                          allow_unused=allow_unused, dry_run=dry_run)
    except CheckpointMismatchError as e:
        message = str(e)
        if message.startswith(f"{module.variables}: "):
            message = f"{path}: module variables: {message[len(module.variables) + 2:]}"
        raise type(e)(message) from None
    report.path, report.kind = path, "tf1_hub"
    return report
