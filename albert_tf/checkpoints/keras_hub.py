"""keras-hub ALBERT presets in and out: a strict loader and a writer over `KERAS_HUB_NAME_TABLE`.

`load_keras_hub_preset` reads a preset directory (`save_to_preset` output of an
`AlbertBackbone`, or of an `AlbertTextClassifier`, whose `logits` layer is our classifier
head) into our encoder or task models with the same strictness and `LoadReport` as the other
formats; `save_keras_hub_preset` writes one that `keras_hub.models.AlbertBackbone.from_preset`
(and, for a classifier, `AlbertTextClassifier.from_preset`) loads: the backbone preset, its
tokenizer (`tokenizer.json`, `assets/tokenizer/vocabulary.spm`) and for a classifier
`task.json`, `task.weights.h5` and `preprocessor.json`. keras-hub itself is not imported.

| our model | keras-hub |
|---|---|
| AlbertEncoder (any head's encoder) | AlbertBackbone |
| AlbertClassifier (GLUE) | AlbertTextClassifier |
"""

from __future__ import annotations

import datetime
import os
from typing import Any, NamedTuple, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.runtime.atomic_files import atomic_directory
from albert_tf.checkpoints import keras_hub_files as files
from albert_tf.checkpoints.hf_config import differing_keys
from albert_tf.checkpoints.keras_hub_config import (config_from_keras_hub, config_to_keras_hub,
                                                    values_from_keras_hub)
from albert_tf.checkpoints.keras_hub_names import (HEAD_NAMES, HEADS_BIAS, HEADS_IN,
                                                   HEADS_OUT, KERAS_HUB_NAME_TABLE,
                                                   PROJECTION_NAMES, TASK_LAYER_PATHS,
                                                   TASK_SKIPPED_ROOTS, TRANSPOSED,
                                                   backbone_layer_paths, keras_hub_scope)
from albert_tf.checkpoints.model_parts import (check_built, encoder_of, part_owners, resolve,
                                               unread_parts)
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport, compare, matches
from albert_tf.config import AlbertConfig
from albert_tf.runtime import paths

# Parts keras-hub has no place for (its AlbertMaskedLM head is not read or written here).
NO_KERAS_HUB_EQUIVALENT = ("mlm_head", "sop_head", "squad_v1_head", "squad_v2_head")
# The keys that decide a model's outputs, compared between the preset and the model.
_ARCHITECTURE_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                      "num_hidden_groups", "num_attention_heads", "intermediate_size",
                      "inner_group_num", "hidden_act", "max_position_embeddings",
                      "type_vocab_size")
CLASSIFIER_DROPOUT = 0.1  # ours and keras-hub's default (Q20)
# What a compiled AlbertTextClassifier's optimizer holds (Adam: iterations, learning rate 1e-5,
# keras-hub's default): keras warns on a task file without it.
TASK_OPTIMIZER_STATE = [np.asarray(0, np.int64), np.asarray(1e-5, np.float32)]
TASK_MODULE = "keras_hub.src.models.albert.albert_text_classifier"
PREPROCESSOR_MODULE = "keras_hub.src.models.albert.albert_text_classifier_preprocessor"
TOKENIZER_MODULE = "keras_hub.src.models.albert.albert_tokenizer"


class Target(NamedTuple):
    """Where a preset tensor goes: our variable, the layout change, the table part."""

    variable: tf.Variable
    layout: str
    part: str


class KerasHubPreset:
    """A preset read: its files, our config from its config.json, its tensors (backbone and,
    for a classifier, the task's) with names and shapes cheaply and values on request."""

    def __init__(self, path: str):
        self.files = files.PresetFiles(path)
        self.directory = self.files.directory
        self.values = values_from_keras_hub(self.files.backbone_config, self.files.config_file)
        self.config = config_from_keras_hub(self.files.backbone_config, self.files.config_file)
        paths = backbone_layer_paths(self.config.num_hidden_groups, self.config.inner_group_num)
        self.backbone = files.H5Weights(self.files.weights_file(), paths)
        self.task = None
        if self.files.is_classifier:
            self.task = files.H5Weights(os.path.join(self.directory, files.TASK_WEIGHTS_FILE),
                                        TASK_LAYER_PATHS, TASK_SKIPPED_ROOTS)
        self.shapes = {**self.backbone.shapes, **(self.task.shapes if self.task else {})}

    def tensor(self, name: str) -> np.ndarray:
        source = self.task if self.task and name in self.task.shapes else self.backbone
        return source.tensor(name)

    @property
    def num_classes(self) -> int:
        return int(self.shapes[HEAD_NAMES[1]][0]) if HEAD_NAMES[1] in self.shapes else 0


def read_keras_hub_preset(path: str) -> KerasHubPreset:
    """The preset at `path`; one-line CheckpointFileError for another architecture, an
    unreadable config or weights file; FileNotFoundError when it is no preset."""
    return KerasHubPreset(path)


def keras_hub_variable_map(model: Any) -> dict[str, Target]:
    """{preset name: target} of every variable keras-hub can name. Raises
    CheckpointMismatchError for sharing keras-hub cannot hold."""
    encoder = encoder_of(model)
    if encoder.config.cross_layer_sharing != "all":
        raise CheckpointMismatchError(
            f"{type(model).__name__}: cross_layer_sharing="
            f"{encoder.config.cross_layer_sharing!r} has no keras-hub equivalent (AlbertBackbone "
            "shares attention and FFN within each group: 'all' only)")
    names: dict[str, Target] = {}
    owners = part_owners(model)
    for part, template, path, layout in KERAS_HUB_NAME_TABLE:
        for scope, layer in owners.get(part, ()):
            check_built(layer)
            name = template.format(scope=keras_hub_scope(scope)) if scope else template
            names[name] = Target(resolve(layer, path), layout, part)
    return names


def _heads(model: Any) -> int:
    return encoder_of(model).config.num_attention_heads


def keras_hub_shape(shape: Sequence[int], layout: str, heads: int) -> list[int]:
    """Our variable's shape in keras-hub's layout."""
    shape = list(shape)
    if layout == TRANSPOSED:
        return shape[::-1]
    if layout == HEADS_IN:
        return [shape[0], heads, shape[1] // heads]
    if layout == HEADS_BIAS:
        return [heads, shape[0] // heads]
    if layout == HEADS_OUT:
        return [heads, shape[0] // heads, shape[1]]
    return shape


def to_keras_hub(value: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """Our value in keras-hub's layout (a reshape or a transpose)."""
    if layout == TRANSPOSED:
        return value.T
    return value.reshape(keras_hub_shape(value.shape, layout, heads))


def _is_identity_projection(preset: KerasHubPreset) -> bool:
    kernel, bias = (preset.tensor(n) for n in PROJECTION_NAMES)
    return (kernel.shape[0] == kernel.shape[1] and np.array_equal(kernel, np.eye(kernel.shape[0]))
            and not np.any(bias))


def _allowed(parts: Sequence[str]) -> list[str]:
    """Allow-lists take part names ("classifier_head", "pooler") or preset name globs."""
    table_parts = {p for p, _, _, _ in KERAS_HUB_NAME_TABLE}
    out = []
    for item in parts:
        if item in table_parts:
            out += [t.replace("{scope}", "*") for p, t, _, _ in KERAS_HUB_NAME_TABLE if p == item]
        else:
            out.append(item)
    return out


def load_keras_hub_preset(model: Any, path: str, allow_missing: Sequence[str] = (),
                          allow_unused: Sequence[str] | None = None,
                          dry_run: bool = False) -> LoadReport:
    """Restores a keras-hub ALBERT preset directory into `model`.

    Args:
      model: a built AlbertEncoder or task model (call it once first).
      path: the preset directory (or a file in it).
      allow_missing: part names or preset name globs the preset may lack.
      allow_unused: preset name globs nothing may read (default: the classifier's `logits`).
      dry_run: compare names, shapes and the config only; assign nothing.
    Raises:
      CheckpointMismatchError naming every missing, unused and mis-shaped tensor and every
      config field that differs; CheckpointFileError for an unreadable preset.
    """
    preset = read_keras_hub_preset(path)
    targets = keras_hub_variable_map(model)
    owners = part_owners(model)
    heads = _heads(model)
    allow = _allowed(list(allow_missing) + list(unread_parts(model)))
    lacking = [p for p in NO_KERAS_HUB_EQUIVALENT if p in owners and not matches(p, allow_missing)]
    problems = [f"config.json field {d} (preset vs model)"
                for d in differing_keys(preset.values, encoder_of(model).config.to_dict(),
                                        _ARCHITECTURE_KEYS)]
    if lacking:
        problems.append(f"a keras-hub preset holds no {', '.join(lacking)} (AlbertBackbone, "
                        "AlbertTextClassifier's logits); allow_missing=[...] loads the rest")
    found = dict(preset.shapes)
    not_compared: set[str] = set()
    if "projection" not in owners and all(n in found for n in PROJECTION_NAMES):
        if _is_identity_projection(preset):  # keras-hub's E = H identity changes nothing
            not_compared |= set(PROJECTION_NAMES)
        else:
            problems.append("embedding_projection is not the identity but the model "
                            "(embedding_size = hidden_size) has none; build the model from the "
                            "preset's config, which keeps it")
    expected = {n: keras_hub_shape(t.variable.shape, t.layout, heads) for n, t in targets.items()}
    report = compare(
        preset.directory, type(model).__name__, expected,
        {n: s for n, s in found.items() if n not in not_compared},
        allow_missing=allow,
        allow_unused=(list(HEAD_NAMES) if allow_unused is None else _allowed(allow_unused)),
        skipped=sorted(not_compared), problems=problems, kind="keras_hub")
    report.targets = {n: t.variable for n, t in targets.items()}
    if dry_run:
        return report
    for name in report.restored:
        target = targets[name]
        value = preset.tensor(name)
        value = value.T if target.layout == TRANSPOSED else value.reshape(target.variable.shape)
        target.variable.assign(value.astype(target.variable.dtype))
    logging.info("keras-hub preset: %s", report.summary())
    return report


def _backbone_layers(model: Any, config: AlbertConfig) -> list[tuple[str, str, list[np.ndarray]]]:
    """(path in model.weights.h5, layer name, values) of the backbone, identity E→H at E = H."""
    heads = config.num_attention_heads
    by_layer: dict[str, list[np.ndarray]] = {}
    for name, target in keras_hub_variable_map(model).items():
        if target.part == "classifier_head":
            continue
        layer, index = name.rsplit("/", 1)
        values = by_layer.setdefault(layer, [])
        assert int(index) == len(values), name  # the table lists each layer's variables in order
        values.append(to_keras_hub(np.asarray(target.variable.numpy()), target.layout, heads))
    if "embedding_projection" not in by_layer:
        hidden = config.hidden_size
        by_layer["embedding_projection"] = [np.eye(hidden, dtype=np.float32),
                                            np.zeros(hidden, np.float32)]
    out = []
    for path, layer in backbone_layer_paths(config.num_hidden_groups,
                                            config.inner_group_num).items():
        if layer.startswith("group_"):  # a TransformerEncoder: its sublayers hold the weights
            prefix = layer + "/"
            out += [(path + "/" + name[len(prefix):], name, values)
                    for name, values in by_layer.items() if name.startswith(prefix)]
        else:
            out.append((path, layer, by_layer.get(layer, [])))
    return out


def _tokenizer_config() -> dict[str, Any]:
    return {"module": TOKENIZER_MODULE, "class_name": "AlbertTokenizer",
            "config": {"name": "albert_tokenizer", "trainable": True,
                       "dtype": {"module": "keras", "class_name": "DTypePolicy",
                                 "config": {"name": "int32"}, "registered_name": None},
                       "config_file": files.TOKENIZER_FILE, "proto": None,
                       "sequence_length": None, "add_bos": False, "add_eos": False},
            "registered_name": "keras_hub>AlbertTokenizer"}


def _preprocessor_config(sequence_length: int) -> dict[str, Any]:
    return {"module": PREPROCESSOR_MODULE, "class_name": "AlbertTextClassifierPreprocessor",
            "config": {"name": "albert_text_classifier_preprocessor", "trainable": True,
                       "dtype": {"module": "keras", "class_name": "DTypePolicy",
                                 "config": {"name": "float32"}, "registered_name": None},
                       "tokenizer": _tokenizer_config(),
                       "config_file": files.PREPROCESSOR_FILE,
                       "sequence_length": sequence_length, "truncate": "round_robin"},
            "registered_name": "keras_hub>AlbertTextClassifierPreprocessor"}


def _task_config(backbone: dict[str, Any], preprocessor: dict[str, Any] | None,
                 num_classes: int) -> dict[str, Any]:
    return {"module": TASK_MODULE, "class_name": "AlbertTextClassifier",
            "config": {"backbone": backbone, "preprocessor": preprocessor,
                       "name": "albert_text_classifier", "num_classes": num_classes,
                       "activation": "linear", "dropout": CLASSIFIER_DROPOUT},
            "registered_name": "keras_hub>AlbertTextClassifier"}


def _metadata(parameters: int) -> dict[str, Any]:
    import keras

    return {"keras_version": keras.version(), "keras_hub_version": None,
            "parameter_count": parameters,
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
            "tasks": ["MaskedLM", "TextClassifier"], "written_by": "albert-tf"}


def save_keras_hub_preset(model: Any, path: str, spm_model_file: str | None = None,
                          classifier: bool | None = None) -> str:
    """Writes `model` as a keras-hub preset directory (staged, then moved in).

    Args:
      model: a built model; its encoder becomes the AlbertBackbone.
      path: the directory to write (files of the same names replaced).
      spm_model_file: becomes the tokenizer (`assets/tokenizer/vocabulary.spm`), with
        `tokenizer.json` and `preprocessor.json` (sequence_length = max_position_embeddings).
      classifier: write the AlbertTextClassifier task too (default: when `model` is an
        AlbertClassifier).
    Returns:
      the directory. Raises ValueError for what keras-hub cannot hold (named).
    """
    config = encoder_of(model).config
    backbone = config_to_keras_hub(config)
    classifier = (type(model).__name__ == "AlbertClassifier") if classifier is None else classifier
    preprocessor = _preprocessor_config(config.max_position_embeddings) if spm_model_file else None
    layers = _backbone_layers(model, config)
    parameters = sum(int(np.prod(v.shape)) for _, _, values in layers for v in values)
    output = atomic_directory(path, existing="merge", what="keras-hub preset")
    with output as staging:
        files.write_json(os.path.join(staging, files.CONFIG_FILE), backbone)
        files.write_weights_h5(os.path.join(staging, files.WEIGHTS_FILE), "albert_backbone",
                               layers)
        files.write_json(os.path.join(staging, files.METADATA_FILE), _metadata(parameters))
        if spm_model_file:
            files.write_json(os.path.join(staging, files.TOKENIZER_FILE), _tokenizer_config())
            files.write_json(os.path.join(staging, files.PREPROCESSOR_FILE), preprocessor)
            files.write_bytes(os.path.join(staging, files.SPM_ASSET),
                              paths.read_bytes(spm_model_file))  # it may lie on a bucket
        if classifier:
            head = model.classifier_head
            logits = [np.asarray(head.output_weights.numpy()).T,
                      np.asarray(head.output_bias.numpy())]
            files.write_json(os.path.join(staging, files.TASK_FILE),
                             _task_config(backbone, preprocessor, int(logits[1].shape[0])))
            files.write_weights_h5(os.path.join(staging, files.TASK_WEIGHTS_FILE),
                                   "albert_text_classifier",
                                   [("dense", "logits", logits), ("dropout", "output_dropout", [])],
                                   extra={"optimizer": TASK_OPTIMIZER_STATE})
        stale = [] if classifier else [files.TASK_FILE, files.TASK_WEIGHTS_FILE]
        for name in stale:  # an earlier save's task would make this preset a classifier again
            if paths.exists(paths.join(output.target, name)):
                paths.remove(paths.join(output.target, name))
    logging.info("Wrote keras-hub preset %s (%s)", path,
                 "AlbertTextClassifier" if classifier else "AlbertBackbone")
    return output.target
