"""Where a run's model comes from: `--albert_config_file`, an encoder export or one of the
original's TF1 Hub modules, or a Hugging Face directory given as `--init_checkpoint`.

Its own floor above `checkpoints/` and `export/` because it reads both (an export handle is
an export; an HF directory is a checkpoint format), below the tasks and tools that call it.

With `--albert_hub_module_handle` (faithfulness §8.1, §10.1) the config is the export's
`albert_config.json` asset and the encoder is the export itself (`HubEncoder`, its
variables trained in place); otherwise the config file builds a fresh `AlbertEncoder`,
which `--init_checkpoint` then fills. The tokenizer follows the same rule (faithfulness Q21, fixed,
as `export_spm_model`): an explicit `--spm_model_file` / `--vocab_file` wins, else the
export's SentencePiece model is used. A TF1 Hub module as the handle (the original's
`google/albert_*` modules, faithfulness §11.2) supplies the config (its `albert_config.json`
asset; a `--albert_config_file` given too must agree with it), the tokenizer (its
`tokenization_info`: the SentencePiece model, and `do_lower_case` for the tokenizer as the
original's `from_hub_module`; the text's lower-casing stays `--do_lower_case`'s, as the
original's processors; Q21 as above) and the initial weights: a fresh `AlbertEncoder` is
warm-started from the module's variables (`initial_checkpoint`), strictly, as from a tarball
checkpoint; a module given as `--init_checkpoint` supplies config and tokenizer the same way.
A TF Model Garden TF2 Hub encoder (`albert_en_*/3`, faithfulness §11.4), as handle or
`--init_checkpoint`, is taken the same way: its config inferred from its weights and signature
(a `--albert_config_file` given must agree), its `sp_model_file` asset, a fresh encoder
warm-started from its variables. A hub URL is one line: nothing downloads at run time. A
Hugging Face `--init_checkpoint` directory likewise supplies the config (its `config.json`;
a `--albert_config_file` given too must agree with it field by field,
`hf_config.config_disagreement`) and the tokenizer (its `spiece.model`, unless a flag names
one); a keras-hub preset as `--init_checkpoint` the same
(its `config.json`, its `assets/tokenizer/vocabulary.spm`). The directory is read once per run (`hf_source.open_hf_directory`):
the config, the pre-flight check and the warm start share one parse of config.json and one
read of the safetensors header.

Which flag wins is decided in one place, `checkpoints.source_plan.plan_sources` (re-exported
here; no TensorFlow, so the checks before a run name the same sources); `source_config` and
`source_tokenizer` load what its plan says (`task_config` / `task_tokenizer`: the same from
the flags' values).

Example:
    >>> plan = plan_sources(opts)                  # opts: a run's options (flags)
    >>> config, tokenizer = source_config(plan), source_tokenizer(plan, opts.do_lower_case)
    >>> config = task_config(None, "exports/albert_tiny")
    >>> model_fn = task_model_fn(lambda config, encoder: AlbertMultipleChoice(config, 4,
    ...                          encoder=encoder), config, "exports/albert_tiny")
"""

from __future__ import annotations

import os
from typing import Callable

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.hf_config import config_disagreement
from albert_tf.checkpoints.hf_source import open_hf_directory
from albert_tf.checkpoints.model_garden import model_garden_config, read_model_garden
from albert_tf.checkpoints.model_garden_files import is_model_garden_export
from albert_tf.checkpoints.tf1_hub import module_config, read_tf1_hub_module
from albert_tf.checkpoints.tf1_hub_files import (MODULE_MARKER, is_hub_url, is_tf1_hub_module,
                                                 url_refusal)
from albert_tf.config import AlbertConfig
from albert_tf.checkpoints.source_plan import HANDLE, INIT_CHECKPOINT, ModelSourcePlan
from albert_tf.checkpoints.source_plan import plan_sources as plan_sources  # re-exported
from albert_tf.checkpoints.tf1_hub_files import CONFIG_ASSET
from albert_tf.export.layout import SAVED_MODEL_PB
from albert_tf.checkpoints.encoder_exports import HubEncoder, export_spm_model, load_export_config
from albert_tf.runtime.flag_errors import checkpoint_error
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.tokenization import FullTokenizer

ModelBuilder = Callable[[AlbertConfig, "keras.layers.Layer | None"], keras.Model]


class ModelSourceError(ValueError):
    """Neither a config nor an export, or an export without what is needed (one line)."""


# Handles whose weights warm-start a fresh AlbertEncoder (not trained in place).
WARM_STARTED = ("tf1_hub", "model_garden")


def hub_handle_kind(handle: str) -> str:
    """"tf1_hub" for one of the original's TF1 Hub modules, "model_garden" for a TF Model Garden
    TF2 Hub encoder, "export" for an encoder export of ours; anything else (a URL, a missing
    path, another SavedModel) is one ModelSourceError."""
    flag = f"--albert_hub_module_handle={handle}"
    if is_hub_url(handle):
        raise ModelSourceError(f"--albert_hub_module_handle={url_refusal(handle)}")
    if is_tf1_hub_module(handle):
        return "tf1_hub"
    if is_model_garden_export(handle):  # a TF2 Hub encoder by TF Model Garden (albert_en_*)
        return "model_garden"
    if not tf.io.gfile.isdir(handle):
        raise ModelSourceError(f"{flag}: no such directory")
    if not tf.io.gfile.exists(os.path.join(handle, SAVED_MODEL_PB)):
        raise ModelSourceError(f"{flag}: not a SavedModel directory (no saved_model.pb)")
    if not tf.io.gfile.exists(os.path.join(handle, "assets", CONFIG_ASSET)):
        raise ModelSourceError(
            f"{flag}: a TF2 SavedModel that is neither an albert-tf encoder export (no "
            f"assets/{CONFIG_ASSET}) nor a TF1 Hub module (no {MODULE_MARKER})")
    return "export"


def initial_checkpoint(init_checkpoint: str | None, hub_handle: str | None) -> str | None:
    """What the warm start reads: `--init_checkpoint`, or a TF1 Hub module handle (its
    variables); None for an encoder export (its variables are the encoder's already)."""
    if init_checkpoint:
        return init_checkpoint
    return hub_handle if hub_handle and hub_handle_kind(hub_handle) in WARM_STARTED else None


def _tf1_module_config(albert_config_file: str | None, path: str, flag: str) -> AlbertConfig:
    """The module's albert_config.json asset (a config file given too must agree), else the
    file; one ModelSourceError line naming the flag."""
    try:
        config = module_config(path, albert_config_file)
    except ValueError as e:  # ConfigError, CheckpointFileError
        raise checkpoint_error(flag, path, e, ModelSourceError) from None
    logging.info("Model config from the TF1 Hub module %s", path)
    return config


def task_config(albert_config_file: str | None, hub_handle: str | None,
                init_checkpoint: str | None = None) -> AlbertConfig:
    """`source_config` of these flags."""
    return source_config(ModelSourcePlan(albert_config_file=albert_config_file,
                                         albert_hub_module_handle=hub_handle,
                                         init_checkpoint=init_checkpoint))


def source_config(plan: ModelSourcePlan) -> AlbertConfig:
    """The model's config from where `plan` says: the handle's asset (a TF1 Hub module's,
    checked against the file; a Model Garden export's, inferred), the config.json of an HF or
    keras-hub `init_checkpoint` directory or the asset of a TF1 Hub module given as
    `init_checkpoint` (checked against the file), else the file."""
    file, kind = plan.albert_config_file, plan.checkpoint_kind
    if plan.config_from == HANDLE:
        handle = plan.albert_hub_module_handle
        if hub_handle_kind(handle) == "tf1_hub":
            return _tf1_module_config(file, handle, HANDLE)
        if hub_handle_kind(handle) == "model_garden":
            return _model_garden_config(file, handle, HANDLE)
        config = load_export_config(handle)
        if file:
            logging.info("Using the config stored in %s (ignoring --albert_config_file=%s)",
                         handle, file)
        return config
    if plan.config_from == INIT_CHECKPOINT:
        path = plan.init_checkpoint
        if kind == "hf":
            return _hf_directory_config(file, path)
        if kind == "keras_hub":
            return _keras_hub_preset_config(file, path)
        if kind == "tf1_hub":
            return _tf1_module_config(file, path, INIT_CHECKPOINT)
        return _model_garden_config(file, path, INIT_CHECKPOINT)
    if plan.config_from is None:
        raise ModelSourceError("albert_config_file is required unless albert_hub_module_handle "
                               "or a Hugging Face init_checkpoint directory is set")
    return AlbertConfig.from_json_file(file)


def _hf_directory_config(albert_config_file: str | None, directory: str) -> AlbertConfig:
    """config.json of the HF directory; a config file given too must describe the same model.

    The weights file's header is read too, so an unreadable directory fails here, before
    any feature file is written."""
    try:
        source = open_hf_directory(directory)
        config = AlbertConfig.from_dict(source.values, source=source.config_file)
        source.weights  # reads the header
    except ValueError as e:  # ConfigError, CheckpointFileError: one line naming the file
        raise ModelSourceError(f"--init_checkpoint={directory}: {e}") from None
    if albert_config_file:
        given = AlbertConfig.from_json_file(albert_config_file)
        differing = config_disagreement(given, config)
        if differing:
            raise ModelSourceError(
                f"--albert_config_file={albert_config_file} and the config.json of "
                f"--init_checkpoint={directory} disagree ({'; '.join(differing)}); omit "
                "--albert_config_file to use the directory's")
    logging.info("Model config from %s/config.json", directory)
    return config


def _keras_hub_preset_config(albert_config_file: str | None, directory: str) -> AlbertConfig:
    """config.json of a keras-hub preset (its weights file opened too, so an unreadable or
    foreign preset fails here); a config file given too must describe the same model."""
    from albert_tf.checkpoints.keras_hub import read_keras_hub_preset

    try:
        preset = read_keras_hub_preset(directory)
    except ValueError as e:  # CheckpointFileError: one line naming the file
        raise ModelSourceError(f"--init_checkpoint={directory}: {e}") from None
    if albert_config_file:
        differing = config_disagreement(AlbertConfig.from_json_file(albert_config_file),
                                        preset.config)
        if differing:
            raise ModelSourceError(
                f"--albert_config_file={albert_config_file} and the config.json of "
                f"--init_checkpoint={directory} disagree ({'; '.join(differing)}); omit "
                "--albert_config_file to use the preset's")
    logging.info("Model config from the keras-hub preset %s", preset.files.config_file)
    return preset.config


def task_tokenizer(vocab_file: str | None, spm_model_file: str | None, do_lower_case: bool,
                   hub_handle: str | None = None,
                   init_checkpoint: str | None = None) -> FullTokenizer:
    """`source_tokenizer` of these flags."""
    plan = ModelSourcePlan(albert_hub_module_handle=hub_handle, init_checkpoint=init_checkpoint,
                           spm_model_file=spm_model_file, vocab_file=vocab_file)
    return source_tokenizer(plan, do_lower_case)


def source_tokenizer(plan: ModelSourcePlan, do_lower_case: bool) -> FullTokenizer:
    """FullTokenizer from where `plan` says: the flags; else the handle's SentencePiece model
    (an export's asset, a TF1 Hub module's `tokenization_info`, a Model Garden export's
    `sp_model_file`); else the one `init_checkpoint` carries (the same for a module or a
    Model Garden export, an HF directory's `spiece.model`, a keras-hub preset's)."""
    if plan.tokenizer_from in (HANDLE, INIT_CHECKPOINT):
        flag = plan.tokenizer_from
        path = getattr(plan, flag)
        kind = hub_handle_kind(path) if flag == HANDLE else plan.checkpoint_kind
        if kind == "model_garden":
            return _model_garden_tokenizer(path, do_lower_case, flag)
        if kind == "tf1_hub":
            return _tf1_module_tokenizer(path, do_lower_case, flag)
        spm_model = (export_spm_model(path, None) if flag == HANDLE
                     else plan.carried_spm_model)
        if flag == INIT_CHECKPOINT:
            logging.info("SentencePiece model from %s", spm_model)
        return FullTokenizer(None, do_lower_case, spm_model)
    if plan.tokenizer_from is None:
        raise ModelSourceError("spm_model_file (SentencePiece) or vocab_file (WordPiece) is "
                               "required (an HF init_checkpoint directory may hold spiece.model, "
                               "a keras-hub preset assets/tokenizer/vocabulary.spm)")
    return FullTokenizer(plan.vocab_file, do_lower_case, plan.spm_model_file)


def _model_garden_config(albert_config_file: str | None, path: str, flag: str) -> AlbertConfig:
    """The config inferred from a Model Garden export (a config file given must agree)."""
    try:
        config = model_garden_config(path, albert_config_file)
    except ValueError as e:  # ConfigError, CheckpointFileError
        raise checkpoint_error(flag, path, e, ModelSourceError) from None
    logging.info("Model config inferred from the Model Garden export %s", path)
    return config


def _model_garden_tokenizer(path: str, do_lower_case: bool, flag: str) -> FullTokenizer:
    """Its `sp_model_file` asset; its `do_lower_case` variable where it has one (as a TF1
    module's), else --do_lower_case."""
    try:
        source = read_model_garden(path)
    except ValueError as e:
        raise checkpoint_error(flag, path, e, ModelSourceError) from None
    if source.spm_model_file is None:
        raise ModelSourceError(f"--{flag}={path}: the export has no sp_model_file asset; pass "
                               "--spm_model_file")
    lower = do_lower_case if source.do_lower_case is None else source.do_lower_case
    logging.info("Tokenizing with the Model Garden export's SentencePiece model %s",
                 source.spm_model_file)
    return FullTokenizer(None, lower, source.spm_model_file)


def _tf1_module_tokenizer(path: str, do_lower_case: bool, flag: str) -> FullTokenizer:
    """The tokenizer of the module's `tokenization_info`, as the original's `from_hub_module`:
    its SentencePiece model, and its do_lower_case for the tokenizer (which SentencePiece
    mode ignores, Q3); the text is lower-cased by `--do_lower_case`, as the original's
    processors do, and a disagreement is logged."""
    try:
        module = read_tf1_hub_module(path)
    except ValueError as e:
        raise checkpoint_error(flag, path, e, ModelSourceError) from None
    if module.spm_model_file is None:
        raise ModelSourceError(f"--{flag}={path}: the module names no SentencePiece model "
                               "(tokenization_info, assets/*.model); pass --spm_model_file")
    module_lower = do_lower_case if module.do_lower_case is None else module.do_lower_case
    if module_lower != do_lower_case:
        logging.warning("The TF1 Hub module %s was exported with do_lower_case=%s, but "
                        "--do_lower_case=%s decides the lower-casing of the text (as in the "
                        "original)", path, module_lower, do_lower_case)
    logging.info("Tokenizing with the TF1 Hub module's SentencePiece model %s",
                 module.spm_model_file)
    return FullTokenizer(None, module_lower, module.spm_model_file)


def task_model_fn(build: ModelBuilder, config: AlbertConfig,
                  hub_handle: str | None = None) -> Callable[..., keras.Model]:
    """(dtype=None) → the task model under `dtype` (a Keras `DTypePolicy`; None: the global
    one), which a task model takes from its encoder: `build(config, AlbertEncoder(config,
    dtype))` (also for a TF1 Hub module, whose weights the warm start reads), or
    `build(config, HubEncoder(handle, dtype=dtype))` for an encoder export."""
    if not hub_handle or hub_handle_kind(hub_handle) in WARM_STARTED:
        return lambda dtype=None: build(config, AlbertEncoder(config, dtype, name="encoder"))

    def from_export(dtype=None) -> keras.Model:
        encoder = HubEncoder(hub_handle, name="encoder", dtype=dtype)
        model = build(config, encoder)
        logging.info("Initial weights: all %d encoder variables from the export %s; the task "
                     "head starts from its initialiser", len(encoder.weights), hub_handle)
        return model

    return from_export
