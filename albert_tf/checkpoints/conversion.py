"""Any supported checkpoint format to any other: original TF1, Hugging Face, ours.

The input's heads decide the model (`detect_head`): pretraining, masked LM, sequence
classification, multiple choice, SQuAD v1 / v2 or the bare encoder. The model is built
from the input's config, loaded strictly, and written in the target format — only the
tensors that came from the input, so a conversion never invents weights. Outputs are
directories: `albert_config.json` + `model.ckpt.*` (original, as the released tarballs),
`albert_config.json` + `model.ckpt-0.*` (ours, what `--init_checkpoint` reads),
`config.json` + `model.safetensors` (HF), a keras-hub preset (`keras_hub`: config.json +
model.weights.h5, task.json + task.weights.h5 for a classifier). The SentencePiece model
(`spm_model_file`, else the one beside the input: `30k-clean.model`, `spiece.model` or a
preset's `vocabulary.spm`) goes along to every format: as `30k-clean.model`, for HF as
`spiece.model` with the tokenizer.json and tokenizer_config.json that make transformers
tokenize as we do (`hf_tokenizer`), for keras-hub as the preset's tokenizer.

Example:
    >>> result = convert_checkpoint("albert-base-v2-hf", "out/albert_base", to="original")
    >>> result.report.summary()
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_directory
from albert_tf.checkpoints import hf_config, hf_files, hf_names
from albert_tf.checkpoints.hf import hf_class_for, hf_tensors, save_hf_checkpoint
from albert_tf.checkpoints.hf_source import open_hf_directory
from albert_tf.checkpoints.keras_hub import read_keras_hub_preset, save_keras_hub_preset
from albert_tf.checkpoints.keras_hub_files import is_keras_hub_preset
from albert_tf.checkpoints.kinds import checkpoint_kind
from albert_tf.checkpoints.loading import load_checkpoint, named_variables
from albert_tf.checkpoints.model_garden import model_garden_config, read_model_garden
from albert_tf.checkpoints.model_garden_files import is_model_garden_export
from albert_tf.checkpoints.original import (load_original_checkpoint, resolve_checkpoint_path,
                                            save_original_checkpoint, variable_map,
                                            write_name_based_checkpoint)
from albert_tf.checkpoints.ours import keyed_variables, model_entries
from albert_tf.checkpoints.tf1_hub import load_tf1_hub_module, module_config, read_tf1_hub_module
from albert_tf.checkpoints.tf1_hub_files import is_tf1_hub_module
from albert_tf.checkpoints.report import CheckpointMismatchError, LoadReport
from albert_tf.config import EMBEDDING_PROJECTION_KEY, AlbertConfig, ConfigError, read_json_file

TARGETS = ("original", "hf", "ours", "keras_hub")
# Older spellings of a target, kept for `convert --to` (deprecated: "keras" read as keras-hub's).
TARGET_ALIASES = {"keras": "ours"}
HEADS = ("encoder", "pretraining", "masked_lm", "classification", "multiple_choice",
         "question_answering", "squad_v2")
# Our head → the HF class it is written as.
HF_CLASS_OF_HEAD = {
    "encoder": "AlbertModel", "pretraining": "AlbertForPreTraining",
    "masked_lm": "AlbertForMaskedLM", "classification": "AlbertForSequenceClassification",
    "multiple_choice": "AlbertForMultipleChoice",
    "question_answering": "AlbertForQuestionAnswering",
}
HEAD_OF_HF_CLASS = {name: head for head, name in HF_CLASS_OF_HEAD.items()}
# Model parts a head's model may lack in its input (left out of the output too).
OPTIONAL_PARTS = {"masked_lm": ("pooler", "sop_head"), "question_answering": ("pooler",)}
CONFIG_FILE = "albert_config.json"
SPM_FILE = "30k-clean.model"  # the released tarballs' name
# The SentencePiece model beside an input, by the names it comes under (tarball, HF).
SPM_NAMES = (SPM_FILE, hf_files.SPM_FILE)
ORIGINAL_PREFIX = "model.ckpt"
NUM_CHOICES = 4  # RACE; the weights do not depend on it


@dataclasses.dataclass
class ConversionResult:
    """What a conversion read and wrote."""

    source_kind: str
    target: str
    head: str
    output: str
    report: LoadReport
    written: int
    spm_model: str | None = None  # the SentencePiece model carried along (None: no tokenizer)


def _heads_of_names(names: dict[str, list[int]], markers: dict[str, str]) -> tuple[str, int]:
    """(head, classes) from the names of a TF checkpoint (`markers`: name → head part)."""
    parts = {markers[name]: shape for name, shape in names.items() if name in markers}
    classes = int(parts["classifier_head"][0]) if "classifier_head" in parts else 0
    if "squad_v2_head" in parts:
        return "squad_v2", 0
    if "squad_v1_head" in parts:
        return "question_answering", 0
    if "classifier_head" in parts:
        return "classification", classes
    if "mlm_head" in parts:
        return ("pretraining" if "sop_head" in parts else "masked_lm"), 0
    return "encoder", 0


_ORIGINAL_MARKERS = {"cls/predictions/output_bias": "mlm_head",
                     "cls/seq_relationship/output_weights": "sop_head",
                     "output_weights": "classifier_head",
                     "cls/squad/output_weights": "squad_v1_head",
                     "start_logits/dense/kernel": "squad_v2_head"}
_OUR_MARKERS = {"mlm_head/output_bias": "mlm_head", "sop_head/output_weights": "sop_head",
                "classifier_head/output_weights": "classifier_head",
                "squad_v1_head/output_weights": "squad_v1_head",
                "squad_v2_head/start_dense/kernel": "squad_v2_head"}


def detect_head(path: str, kind: str | None = None) -> tuple[str, int]:
    """(head, number of classes) of a checkpoint in any format, from its names (HF: its
    `architectures`). An [1, H] classifier reads as classification (regression); pass
    head="multiple_choice" to `convert_checkpoint` for a RACE model."""
    kind = kind or checkpoint_kind(path)
    if kind == "keras_hub":  # an AlbertTextClassifier task preset, else the backbone
        preset = read_keras_hub_preset(path)
        return ("classification", preset.num_classes) if preset.task else ("encoder", 0)
    if kind in ("model_garden", "model_garden_checkpoint"):  # BertPretrainerV2: MLM, no SOP
        return ("masked_lm" if read_model_garden(path).has_mlm else "encoder"), 0
    if kind == "hf":
        source = open_hf_directory(path)
        directory, raw, shapes = source.directory, source.raw, source.weights.shapes
        architecture = (raw.get("architectures") or [None])[0]
        classes = int(shapes["classifier.weight"][0]) if "classifier.weight" in shapes else 0
        if architecture in HEAD_OF_HF_CLASS:
            return HEAD_OF_HF_CLASS[architecture], classes
        if architecture in hf_names.HF_CLASSES:
            raise CheckpointMismatchError(f"{directory}: HF {architecture} has no albert-tf model")
        markers = {"predictions.bias": "mlm_head", "sop_classifier.classifier.weight": "sop_head",
                   "classifier.weight": "classifier_head", "qa_outputs.weight": "squad_v1_head"}
        return _heads_of_names(shapes, markers)
    prefix = (read_tf1_hub_module(path).variables if kind == "tf1_hub"
              else resolve_checkpoint_path(path))
    shapes = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
    if kind == "ours":
        shapes = {key: shapes[name] for key, name in model_entries(shapes).items()}
        return _heads_of_names(shapes, _OUR_MARKERS)
    return _heads_of_names(shapes, _ORIGINAL_MARKERS)


def read_config_file(path: str) -> AlbertConfig:
    """An `albert_config.json`, an HF `config.json` (or its directory) or a keras-hub preset's
    `config.json` (or its directory), told by its keys."""
    if is_keras_hub_preset(path):
        return read_keras_hub_preset(path).config
    if paths.isdir(path):
        return hf_config.config_from_hf(path)
    values = read_json_file(path)
    if isinstance(values, dict) and "model_type" in values:
        return hf_config.config_from_hf(path)
    return AlbertConfig.from_dict(values, source=path)


def source_config(path: str, kind: str, albert_config_file: str | None) -> AlbertConfig:
    """The input's config: HF config.json, else the given file or albert_config.json beside
    the checkpoint. An HF E = H identity projection is dropped (the original has none)."""
    if kind == "hf":
        source = open_hf_directory(path)
        directory, values = source.directory, source.values
        if values.get(EMBEDDING_PROJECTION_KEY):
            weights = source.weights
            kernel = [n for n in weights.shapes if n.endswith("embedding_hidden_mapping_in.weight")]
            bias = [n for n in weights.shapes if n.endswith("embedding_hidden_mapping_in.bias")]
            if kernel and bias:
                k, b = weights.tensor(kernel[0]), weights.tensor(bias[0])
                if np.array_equal(k, np.eye(k.shape[0], dtype=k.dtype)) and not np.any(b):
                    del values[EMBEDDING_PROJECTION_KEY]
        config = AlbertConfig.from_dict(values, source=f"{directory}/config.json")
        if albert_config_file:
            given = read_config_file(albert_config_file)
            differing = hf_config.config_disagreement(given, config)
            if differing:
                raise ConfigError(f"{albert_config_file} and {directory}/config.json disagree "
                                  f"({'; '.join(differing)})")
        return config
    if kind == "tf1_hub":  # its albert_config.json asset, which a file given must agree with
        return module_config(path, albert_config_file)
    if kind in ("model_garden", "model_garden_checkpoint"):  # inferred; a file must agree
        return model_garden_config(path, albert_config_file)
    if kind == "keras_hub":  # its config.json, which a file given must agree with
        preset = read_keras_hub_preset(path)
        if albert_config_file:
            differing = hf_config.config_disagreement(read_config_file(albert_config_file),
                                                      preset.config)
            if differing:
                raise ConfigError(f"{albert_config_file} and {preset.files.config_file} "
                                  f"disagree ({'; '.join(differing)})")
        return preset.config
    if albert_config_file:
        return read_config_file(albert_config_file)
    prefix = resolve_checkpoint_path(path)
    beside = os.path.join(os.path.dirname(prefix), CONFIG_FILE)
    if not paths.exists(beside):
        raise ConfigError(f"{path}: no {CONFIG_FILE} beside the checkpoint; pass "
                          "--albert_config_file")
    return AlbertConfig.from_json_file(beside)


def build_model(head: str, config: AlbertConfig, num_classes: int = 2) -> Any:
    """The built (called once) model of `head`."""
    from albert_tf import models

    builders = {
        "encoder": lambda: models.AlbertEncoder(config),
        "pretraining": lambda: models.AlbertPretrainer(config),
        "masked_lm": lambda: models.AlbertPretrainer(config),
        "classification": lambda: models.AlbertClassifier(config, num_classes),
        "multiple_choice": lambda: models.AlbertMultipleChoice(config, NUM_CHOICES),
        "question_answering": lambda: models.AlbertSpanLabeler(config),
        "squad_v2": lambda: models.AlbertSpanLabeler(config, version_2_with_negative=True),
    }
    model = builders[head]()
    ids = np.ones((1, 4), "int32")
    inputs = {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}
    if head == "multiple_choice":
        inputs = {k: np.stack([v] * NUM_CHOICES, axis=1) for k, v in inputs.items()}
    elif head in ("pretraining", "masked_lm"):
        inputs["masked_lm_positions"] = np.zeros((1, 1), "int32")
    elif head == "squad_v2":
        inputs.update(p_mask=0 * ids, start_positions=None)
    model(inputs)
    return model


def _write_original(model: Any, config: AlbertConfig, restored: set[int], directory: str,
                    global_step: int | None) -> int:
    if config.hidden_act.lower() not in ("gelu", "relu", "tanh", "linear"):
        raise ConfigError(f"field 'hidden_act' {config.hidden_act!r} does not exist in the "
                          "original release (its 'gelu' is the tanh form); keep this model in hf "
                          "or ours")
    if config.extra.get(EMBEDDING_PROJECTION_KEY) and config.embedding_size == config.hidden_size:
        raise ConfigError("the model has an E→H projection at embedding_size = hidden_size, which "
                          "the original release does not have; keep it in hf or ours")
    values = {n: v.numpy() for n, v in variable_map(model).items() if id(v) in restored}
    if global_step is not None:
        values["global_step"] = np.asarray(global_step, np.int64)
    write_name_based_checkpoint(values, os.path.join(directory, ORIGINAL_PREFIX))
    config.to_json_file(os.path.join(directory, CONFIG_FILE))
    return len(values)


def _write_ours(model: Any, config: AlbertConfig, restored: set[int], directory: str) -> int:
    variables = {k: v for k, v in named_variables(model, "ours").items() if id(v) in restored}
    checkpoint = tf.train.Checkpoint(model=keyed_variables(variables.values()))
    tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1,
                               checkpoint_name=ORIGINAL_PREFIX).save(checkpoint_number=0)
    config.to_json_file(os.path.join(directory, CONFIG_FILE))
    return len(variables)


def _write_hf(model: Any, head: str, directory: str, spm_model_file: str | None,
              label_names: list[str] | None, do_lower_case: bool) -> int:
    """The HF class of `head` holds exactly the parts its strict load required."""
    hf_class = hf_class_for(model, HF_CLASS_OF_HEAD.get(head))
    save_hf_checkpoint(model, directory, hf_class.name, spm_model_file, label_names,
                       do_lower_case)
    return len(hf_tensors(model, hf_class))


def _write_keras_hub(model: Any, head: str, restored: set[int], directory: str,
                     spm_model_file: str | None) -> int:
    """The backbone preset (+ the AlbertTextClassifier task for a classifier): keras-hub's
    backbone has every encoder part, so the input must have had them."""
    from albert_tf.checkpoints.keras_hub import keras_hub_variable_map

    targets = keras_hub_variable_map(model)
    lacking = sorted({t.part for t in targets.values() if id(t.variable) not in restored})
    if lacking:
        raise CheckpointMismatchError(f"the input has no {', '.join(lacking)}, which keras-hub's "
                                      "AlbertBackbone holds; nothing would fill it")
    if head not in ("encoder", "classification"):
        logging.warning("keras-hub presets hold the encoder and a text classifier only: the %s "
                        "head is not written", head)
    save_keras_hub_preset(model, directory, spm_model_file,
                          classifier=head == "classification")
    return sum(1 for t in targets.values()
               if head == "classification" or t.part != "classifier_head")


def spm_model_beside(path: str, kind: str) -> str | None:
    """The SentencePiece model in the input's directory (`SPM_NAMES`), if any: a released
    tarball's `30k-clean.model`, an HF directory's `spiece.model`."""
    if kind == "tf1_hub":  # the asset its tokenization_info names
        return read_tf1_hub_module(path).spm_model_file
    if kind == "model_garden":  # its sp_model_file asset
        return read_model_garden(path).spm_model_file
    if kind == "keras_hub":  # assets/tokenizer/vocabulary.spm
        return read_keras_hub_preset(path).files.spm_model_file
    if kind == "hf":
        directory = hf_files.hf_directory(path)
    else:
        directory = os.path.dirname(resolve_checkpoint_path(path))
    for name in SPM_NAMES:
        candidate = os.path.join(directory or "", name)
        if paths.isfile(candidate):
            return candidate
    return None


def _hf_label_names(path: str, classes: int) -> list[str] | None:
    """An HF classifier's id2label, kept through a conversion (None: none or another count)."""
    id2label = open_hf_directory(path).raw.get("id2label") or {}
    try:
        names = [id2label[str(i)] for i in range(classes)]
    except (KeyError, TypeError):
        return None
    return names if classes and len(id2label) == classes else None


def convert_checkpoint(input_path: str, output: str, to: str,
                       albert_config_file: str | None = None, head: str | None = None,
                       spm_model_file: str | None = None,
                       global_step: int | None = None,
                       label_names: list[str] | None = None,
                       do_lower_case: bool = True) -> ConversionResult:
    """Converts `input_path` (any format) into the directory `output` in format `to`.

    Args:
      input_path: original TF1 prefix/directory, our checkpoint, an HF directory, a TF1
        Hub module directory or a keras-hub preset (their config and SentencePiece assets
        are used).
      output: directory to write (files of the same names are replaced; all files are
        written in a staging directory first).
      to: "original", "hf", "ours" or "keras_hub" (a keras-hub preset); "keras", the
        deprecated name of "ours", is accepted.
      albert_config_file: the input's config when not beside it (not needed for HF); an
        `albert_config.json` or an HF `config.json`.
      head: the model (`HEADS`) instead of the one detected from the input's names.
      spm_model_file: SentencePiece model to carry along (default: `spm_model_beside` the
        input; none there is logged, and `ConversionResult.spm_model` is None).
      global_step: written as `global_step` in an original checkpoint when given.
      label_names: a classifier's id2label for HF (default: an HF input's, else LABEL_i).
      do_lower_case: whether the HF tokenizer lower-cases (as the scripts' flag).
    """
    to = TARGET_ALIASES.get(to, to)
    if to not in TARGETS:
        raise ValueError(f"to must be one of {', '.join(TARGETS)}, got {to!r}")
    kind = checkpoint_kind(input_path)
    detected, classes = detect_head(input_path, kind)
    head = head or detected
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
    config = source_config(input_path, kind, albert_config_file)
    model = build_model(head, config, classes or 2)
    report = load_checkpoint(model, input_path, allow_missing=OPTIONAL_PARTS.get(head, ()))
    restored = {id(report.targets[n]) for n in report.restored}
    spm_model_file = spm_model_file or spm_model_beside(input_path, kind)
    if not spm_model_file:
        logging.warning("No SentencePiece model beside %s (%s) and none given: %s gets no "
                        "tokenizer", input_path, " or ".join(SPM_NAMES), output)
    if kind == "hf" and head == "classification" and not label_names:
        label_names = _hf_label_names(input_path, classes)
    with atomic_directory(output, existing="merge", what="converted checkpoint") as staging:
        if to == "original":
            written = _write_original(model, config, restored, staging, global_step)
        elif to == "ours":
            written = _write_ours(model, config, restored, staging)
        elif to == "keras_hub":
            written = _write_keras_hub(model, head, restored, staging, spm_model_file)
        else:
            written = _write_hf(model, head, staging, spm_model_file, label_names,
                                do_lower_case)
        if spm_model_file and to not in ("hf", "keras_hub"):  # local or a bucket's
            with open(os.path.join(staging, SPM_FILE), "wb") as f:  # umask's mode
                f.write(paths.read_bytes(spm_model_file))
    logging.info("Converted %s (%s, %s) to %s: %s", input_path, kind, head, to, output)
    return ConversionResult(kind, to, head, paths.absolute(output), report, written,
                            spm_model_file)


def _export_model_garden(path: str, config_file: str | None, export_path: str) -> str:
    """export_checkpoints of a Model Garden export or object checkpoint: the encoder and the
    masked-LM head where it has one (Model Garden has no SOP head; nothing is invented)."""
    head = "masked_lm" if read_model_garden(path).has_mlm else "encoder"
    model = build_model(head, model_garden_config(path, config_file))
    report = load_checkpoint(model, path, allow_missing=OPTIONAL_PARTS.get(head, ()))
    logging.info("%s: %s", path, report.summary())
    values = {name: report.targets[name].numpy() for name in report.restored}
    values["global_step"] = np.asarray(0, np.int64)
    return write_name_based_checkpoint(values, export_path)


def export_model_checkpoint(albert_directory: str, checkpoint_name: str, export_path: str) -> str:
    """The original's export_checkpoints (faithfulness §11.3): encoder + MLM + SOP of
    `albert_directory/checkpoint_name` (a released tarball's layout; or a TF1 Hub module
    directory, whose config asset and variables are read, `checkpoint_name` unused) →
    `export_path` with a fresh `global_step` of 0. Returns the prefix written."""
    if is_tf1_hub_module(albert_directory):
        model = build_model("pretraining", module_config(albert_directory))
        report = load_tf1_hub_module(model, albert_directory)
        logging.info("TF1 Hub module: %s", report.summary())
        return save_original_checkpoint(model, export_path, global_step=0)
    if is_model_garden_export(albert_directory):
        return _export_model_garden(albert_directory, None, export_path)
    if is_keras_hub_preset(albert_directory):  # its backbone: keras-hub has no MLM / SOP head
        preset = read_keras_hub_preset(albert_directory)
        model = build_model("encoder", preset.config)
        load_checkpoint(model, albert_directory, kind="keras_hub")
        return save_original_checkpoint(model, export_path, global_step=0)
    prefix = os.path.join(albert_directory, checkpoint_name)
    if checkpoint_kind(prefix) == "model_garden_checkpoint":
        return _export_model_garden(prefix, os.path.join(albert_directory, CONFIG_FILE),
                                    export_path)
    config = AlbertConfig.from_json_file(os.path.join(albert_directory, CONFIG_FILE))
    model = build_model("pretraining", config)
    # The load and the save each log their line (the report, the prefix written): once.
    load_original_checkpoint(model, os.path.join(albert_directory, checkpoint_name))
    return save_original_checkpoint(model, export_path, global_step=0)
