"""Hugging Face ALBERT checkpoints in and out: a strict loader and a writer over `HF_NAME_TABLE`.

`load_hf_checkpoint` reads a local HF model directory (`save_pretrained` output) into our
encoder, pretrainer or task models with the same strictness and `LoadReport` as the
original's loader; `save_hf_checkpoint` writes one that `transformers` loads with
`from_pretrained` into the matching class without missing or unexpected weights:

| our model | HF class |
|---|---|
| AlbertEncoder | AlbertModel |
| AlbertPretrainer | AlbertForPreTraining (or AlbertForMaskedLM: no pooler, no SOP) |
| AlbertClassifier (GLUE; 1 class = regression) | AlbertForSequenceClassification |
| AlbertSpanLabeler, SQuAD v1 | AlbertForQuestionAnswering |
| AlbertMultipleChoice (RACE) | AlbertForMultipleChoice |

HF has no equivalent of the original's SQuAD v2 head (answer-class logits, end conditioned
on the start) nor of `cross_layer_sharing` other than "all": both are refused by name.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints import hf_config, hf_names
from albert_tf.checkpoints.hf_files import HFWeights, write_hf_directory
from albert_tf.checkpoints.hf_names import (BASE_PREFIX, HF_CLASSES, HF_NAME_TABLE,
                                            HF_SKIPPED, HF_TIED, NO_HF_EQUIVALENT,
                                            PROJECTION_NAMES, TRANSPOSED)
from albert_tf.checkpoints.hf_source import open_hf_directory
from albert_tf.checkpoints.hf_tokenizer import hf_tokenizer_files
from albert_tf.checkpoints.model_parts import (ENCODER_PARTS, check_built, encoder_of,
                                               part_owners, resolve, unread_parts)
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport, compare, matches

# Our model class → the HF class it is saved as by default.
DEFAULT_HF_CLASS = {
    "AlbertEncoder": "AlbertModel",
    "AlbertPretrainer": "AlbertForPreTraining",
    "AlbertClassifier": "AlbertForSequenceClassification",
    "AlbertMultipleChoice": "AlbertForMultipleChoice",
    "AlbertSpanLabeler": "AlbertForQuestionAnswering",
}


class HFTarget(NamedTuple):
    """Where an HF tensor goes: our variable, the layout change, the table part."""

    variable: tf.Variable
    layout: str
    part: str


def hf_variable_map(model: Any) -> tuple[dict[str, HFTarget], dict[str, tf.Variable]]:
    """({HF name: target} of every variable HF can name, {our path: variable} of the rest).

    The rest are heads without an HF counterpart (the SQuAD v2 head). Raises
    CheckpointMismatchError when the model shares weights in a way HF cannot hold.
    """
    encoder = encoder_of(model)
    sharing = encoder.config.cross_layer_sharing
    if sharing != "all":
        raise CheckpointMismatchError(
            f"{type(model).__name__}: cross_layer_sharing={sharing!r} has no Hugging Face "
            "equivalent (HF ALBERT shares attention and FFN within each group: 'all' only)")
    owners = part_owners(model)
    names: dict[str, HFTarget] = {}
    for part, template, path, layout in HF_NAME_TABLE:
        for scope, layer in owners.get(part, ()):
            check_built(layer)
            name = template.format(scope=hf_names.hf_scope(scope)) if scope else template
            names[name] = HFTarget(resolve(layer, path), layout, part)
    unmapped = {}
    for part in NO_HF_EQUIVALENT:
        for _, layer in owners.get(part, ()):
            check_built(layer)
            unmapped.update({w.path: w for w in layer.weights})
    return names, unmapped


def _hf_shape(variable: tf.Variable, layout: str) -> list[int]:
    shape = list(variable.shape)
    return shape[::-1] if layout == TRANSPOSED else shape


def _part_patterns(parts: Sequence[str]) -> list[str]:
    """Allow-lists take HF name globs or part names ("mlm_head", "pooler", "squad_v2_head")."""
    patterns = []
    table_parts = {p for p, _, _, _ in HF_NAME_TABLE}
    for item in parts:
        if item in table_parts:
            patterns += [t.replace("{scope}", "*") for p, t, _, _ in HF_NAME_TABLE if p == item]
        elif item in NO_HF_EQUIVALENT:
            patterns.append(f"{item}/*")
        else:
            patterns.append(item)
    return patterns


def _canonical_names(shapes: dict[str, list[int]]) -> dict[str, str]:
    """{our table's name: the file's name}: an AlbertModel file transformers wrote has no
    `albert.` prefix (ours have it)."""
    if any(name.startswith(BASE_PREFIX) for name in shapes):
        return {name: name for name in shapes}
    return {(BASE_PREFIX + name if name.split(".")[0] in ("embeddings", "encoder", "pooler")
             else name): name for name in shapes}


def read_hf_model_config(path: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(directory, HF config dict, our config values) of an HF directory; one-line errors.

    Read once while the files are unchanged (`hf_source.open_hf_directory`)."""
    source = open_hf_directory(path)
    return source.directory, source.raw, source.values


def _is_identity_projection(weights: HFWeights, names: dict[str, str]) -> bool:
    kernel = weights.tensor(names[PROJECTION_NAMES[0]])
    bias = weights.tensor(names[PROJECTION_NAMES[1]])
    return (kernel.ndim == 2 and kernel.shape[0] == kernel.shape[1]
            and np.array_equal(kernel, np.eye(kernel.shape[0], dtype=kernel.dtype))
            and not np.any(bias))


def load_hf_checkpoint(model: Any, path: str, allow_missing: Sequence[str] = (),
                       allow_unused: Sequence[str] | None = None,
                       dry_run: bool = False) -> LoadReport:
    """Restores a Hugging Face ALBERT directory (config.json + model.safetensors) into `model`.

    Args:
      model: a built AlbertEncoder, AlbertPretrainer or task model (call it once first).
      path: the directory (or its config.json / model.safetensors).
      allow_missing: part names ("pooler", "sop_head", "classifier_head", …) or HF name
        globs of model variables the file may lack (e.g. an AlbertForMaskedLM file has no
        pooler and no SOP head).
      allow_unused: HF name globs of file tensors nothing may read. Default: the heads of
        other tasks.
      dry_run: compare names, shapes and the config only (the safetensors header); assign
        nothing. (The E = H projection is read: it must be the identity for a model
        without one.)
    Returns:
      LoadReport with HF names.
    Raises:
      CheckpointMismatchError naming every missing, unused and mis-shaped tensor and every
      config field that differs; CheckpointFileError for an unreadable directory.
    """
    source = open_hf_directory(path)
    raw_config, values, weights = source.raw, source.values, source.weights
    names = _canonical_names(weights.shapes)
    found = {name: weights.shapes[file_name] for name, file_name in names.items()}
    targets, unmapped = hf_variable_map(model)
    owners = part_owners(model)
    allow = _part_patterns(allow_missing)
    allow += _part_patterns(unread_parts(model))  # e.g. HF's QA file has no pooler
    architecture = (raw_config.get("architectures") or [None])[0]
    hf_class = HF_CLASSES.get(architecture)
    foreign = [n for n in (hf_class.foreign_tensors if hf_class else ()) if n in found]
    tied = [n for n in HF_TIED if n in found]
    identity_projection = ("projection" not in owners and all(n in found for n in PROJECTION_NAMES)
                           and _is_identity_projection(weights, names))
    not_compared = set(tied) | set(foreign) | {n for n in found if n in HF_SKIPPED}
    if identity_projection:  # the original's E = H model: HF's identity E→H changes nothing
        not_compared |= set(PROJECTION_NAMES)

    problems = [f"config.json field {d} (file vs model)"
                for d in hf_config.differing_keys(values, encoder_of(model).config.to_dict())]
    problems += [f"{n} {found[n]} is not a copy of {HF_TIED[n]} {found.get(HF_TIED[n])} "
                 "(ALBERT ties the decoder)" for n in tied if found[n] != found.get(HF_TIED[n])]
    if foreign and "classifier_head" in owners and not matches("classifier.weight", allow):
        problems.append(f"HF {architecture}'s {', '.join(foreign)} is a per-token classifier "
                        "with no albert-tf equivalent")
    if ("projection" not in owners and PROJECTION_NAMES[0] in found
            and not identity_projection):
        problems.append("albert.encoder.embedding_hidden_mapping_in is not the identity but the "
                        "model (embedding_size = hidden_size) has no E→H projection; build the "
                        "model from checkpoints.hf_config.config_from_hf(directory), which keeps it")
    if (hf_class is not None and not hf_class.has_pooler and "pooler" in owners
            and not all(matches(n, allow) for n in hf_names.POOLER_NAMES)):
        problems.append(f"HF {architecture} files have no pooler, which {type(model).__name__} "
                        "reads (a file with one: AlbertModel, AlbertForPreTraining, "
                        "AlbertForSequenceClassification, AlbertForMultipleChoice)")
    if "squad_v2_head" in owners and "qa_outputs.weight" in found:
        problems.append(f"HF {architecture or 'AlbertForQuestionAnswering'} cannot fill this "
                        f"model: {NO_HF_EQUIVALENT['squad_v2_head']}")
    elif any(not matches(n, allow) for n in unmapped):
        problems.append(f"{NO_HF_EQUIVALENT['squad_v2_head']} (allow_missing=['squad_v2_head'] "
                        "loads the encoder alone)")

    expected = {n: _hf_shape(t.variable, t.layout) for n, t in targets.items()}
    expected.update({n: list(v.shape) for n, v in unmapped.items()})
    report = compare(
        weights.file, type(model).__name__, expected,
        {n: s for n, s in found.items() if n not in not_compared}, allow_missing=allow,
        allow_unused=(hf_names.head_names() if allow_unused is None
                      else _part_patterns(allow_unused)),
        skipped=sorted(not_compared - set(foreign)), problems=problems, kind="hf")
    report.unused = sorted(set(report.unused) | set(foreign))
    report.targets = {**{n: t.variable for n, t in targets.items()}, **unmapped}
    if dry_run:
        return report
    for name in tied:
        if not np.array_equal(weights.tensor(names[name]), weights.tensor(names[HF_TIED[name]])):
            raise CheckpointMismatchError(
                f"{weights.file}: {name} differs from {HF_TIED[name]}; ALBERT ties the masked-LM "
                "decoder to the word embeddings and has no place for a separate one")
    for name in report.restored:
        target = targets[name]
        value = weights.tensor(names[name])
        value = value.T if target.layout == TRANSPOSED else value
        target.variable.assign(value.astype(target.variable.dtype))
    logging.info("Hugging Face checkpoint: %s", report.summary())
    return report


def hf_class_for(model: Any, architecture: str | None = None) -> hf_names.HFClass:
    """The HF class `model` is saved as: `architecture`, or the default for its type."""
    model_name = type(model).__name__
    if getattr(model, "squad_v2_head", None) is not None:
        raise CheckpointMismatchError(f"{model_name} (version_2_with_negative): "
                                      f"{NO_HF_EQUIVALENT['squad_v2_head']}")
    name = architecture or DEFAULT_HF_CLASS.get(model_name)
    if name not in HF_CLASSES:
        raise CheckpointMismatchError(
            f"{model_name}: no Hugging Face class to save it as (got {name!r}; expected one of "
            f"{', '.join(sorted(HF_CLASSES))})")
    hf_class = HF_CLASSES[name]
    owners = part_owners(model)
    lacking = [part for part in hf_class.heads if part not in owners]
    if lacking or hf_class.foreign_tensors:
        raise CheckpointMismatchError(
            f"{model_name} cannot be saved as HF {name}: it has no "
            f"{', '.join(lacking) or 'per-token classifier'}")
    return hf_class


def _head_config(model: Any, hf_class: hf_names.HFClass,
                 label_names: Sequence[str] | None) -> dict[str, Any]:
    """HF config keys of the head: labels of a sequence classifier, the QA head's 2 logits."""
    if hf_class.name == "AlbertForSequenceClassification":
        count = model.num_classes
        labels = list(label_names) if label_names else [f"LABEL_{i}" for i in range(count)]
        if len(labels) != count:
            raise ValueError(f"label_names has {len(labels)} names for {count} classes")
        return {"id2label": {str(i): label for i, label in enumerate(labels)},
                "label2id": {label: i for i, label in enumerate(labels)},
                "problem_type": "regression" if count == 1 else "single_label_classification"}
    if hf_class.name == "AlbertForQuestionAnswering":
        return {"id2label": {"0": "LABEL_0", "1": "LABEL_1"},
                "label2id": {"LABEL_0": 0, "LABEL_1": 1}}
    return {}


def hf_tensors(model: Any, hf_class: hf_names.HFClass) -> dict[str, np.ndarray]:
    """{HF name: value in HF's layout} of what `hf_class` holds (identity E→H at E = H)."""
    targets, _ = hf_variable_map(model)
    wanted = {p for p in ENCODER_PARTS if p != "pooler" or hf_class.has_pooler}
    wanted |= set(hf_class.heads)
    tensors = {}
    for name, target in targets.items():
        if target.part in wanted:
            value = np.asarray(target.variable.numpy())
            tensors[name] = value.T if target.layout == TRANSPOSED else value
    if PROJECTION_NAMES[0] not in tensors:  # E = H: HF always has the projection
        hidden = encoder_of(model).config.hidden_size
        tensors[PROJECTION_NAMES[0]] = np.eye(hidden, dtype=np.float32)
        tensors[PROJECTION_NAMES[1]] = np.zeros(hidden, np.float32)
    # AlbertModel too keeps the `albert.` prefix (as transformers' task models write it):
    # transformers loads it into every class as its own AlbertModel file, and keras-hub's
    # Hugging Face loader reads only prefixed names.
    return tensors


def save_hf_checkpoint(model: Any, path: str, architecture: str | None = None,
                       spm_model_file: str | None = None,
                       label_names: Sequence[str] | None = None,
                       do_lower_case: bool = True) -> str:
    """Writes `model` as a Hugging Face ALBERT directory: config.json + model.safetensors.

    `transformers.<architecture>.from_pretrained(path)` then loads it without missing or
    unexpected weights. Our "gelu" is written as HF's "gelu_new" (the same tanh form). With a
    SentencePiece model, `AutoTokenizer.from_pretrained(path)` (and `pipeline`) tokenizes as
    our scripts do, segment ids included (`hf_tokenizer`).

    Args:
      model: a built model (see the module's table for the default HF class).
      path: directory to write (created; existing files of the same names replaced).
      architecture: HF class name, e.g. "AlbertForMaskedLM" for an AlbertPretrainer.
      spm_model_file: copied as spiece.model, with tokenizer.json and tokenizer_config.json
        made from it (model_max_length = max_position_embeddings).
      label_names: id2label of a sequence classifier (default LABEL_0 …).
      do_lower_case: whether the tokenizer lower-cases (as `--do_lower_case` did).
    Raises:
      CheckpointMismatchError for a model HF cannot represent (SQuAD v2 head,
      cross_layer_sharing other than "all"); ConfigError for an activation HF lacks.
    """
    hf_class = hf_class_for(model, architecture)
    tensors = hf_tensors(model, hf_class)
    model_config = encoder_of(model).config
    config = hf_config.config_to_hf(model_config)
    config.update(architectures=[hf_class.name], **_head_config(model, hf_class, label_names))
    tokenizer = None
    if spm_model_file:
        tokenizer = hf_tokenizer_files(spm_model_file, model_config.max_position_embeddings,
                                       do_lower_case)
        config.update(tokenizer.token_ids)
    path = write_hf_directory(path, config, tensors, spm_model_file,
                              tokenizer.files if tokenizer else None)
    logging.info("Wrote Hugging Face %s to %s (%d tensors)", hf_class.name, path, len(tensors))
    return path
