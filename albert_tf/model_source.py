"""Where a run's model comes from: `--albert_config_file`, an encoder export, or a
Hugging Face directory given as `--init_checkpoint`.

Its own floor above `checkpoints/` and `export/` because it reads both (an export handle is
an export; an HF directory is a checkpoint format), below the tasks and tools that call it.

With `--albert_hub_module_handle` (faithfulness §8.1, §10.1) the config is the export's
`albert_config.json` asset and the encoder is the export itself (`HubEncoder`, its
variables trained in place); otherwise the config file builds a fresh `AlbertEncoder`,
which `--init_checkpoint` then fills. The tokenizer follows the same rule (faithfulness Q21, fixed,
as `export_spm_model`): an explicit `--spm_model_file` / `--vocab_file` wins, else the
export's SentencePiece model is used. A Hugging Face `--init_checkpoint` directory likewise
supplies the config (its `config.json`; a `--albert_config_file` given too must agree with it
field by field, `hf_config.config_disagreement`) and the tokenizer (its `spiece.model`,
unless a flag names one). The directory is read once per run (`hf_source.open_hf_directory`):
the config, the pre-flight check and the warm start share one parse of config.json and one
read of the safetensors header.

Example:
    >>> config = task_config(None, "exports/albert_tiny")
    >>> model_fn = task_model_fn(lambda config, encoder: AlbertMultipleChoice(config, 4,
    ...                          encoder=encoder), config, "exports/albert_tiny")
"""

from __future__ import annotations

from typing import Callable

import keras
from absl import logging

from albert_tf.checkpoints.hf_config import config_disagreement
from albert_tf.checkpoints.hf_files import spm_model_of
from albert_tf.checkpoints.hf_source import open_hf_directory
from albert_tf.checkpoints.kinds import is_hf_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.export.loading import HubEncoder, export_spm_model, load_export_config
from albert_tf.tokenization import FullTokenizer

ModelBuilder = Callable[[AlbertConfig, "keras.layers.Layer | None"], keras.Model]


class ModelSourceError(ValueError):
    """Neither a config nor an export, or an export without what is needed (one line)."""


def task_config(albert_config_file: str | None, hub_handle: str | None,
                init_checkpoint: str | None = None) -> AlbertConfig:
    """The model's config: the export's asset when a handle is given, the config.json of an
    HF `init_checkpoint` directory, else the file."""
    if hub_handle:
        config = load_export_config(hub_handle)
        if albert_config_file:
            logging.info("Using the config stored in %s (ignoring --albert_config_file=%s)",
                         hub_handle, albert_config_file)
        return config
    if is_hf_checkpoint(init_checkpoint):
        return _hf_directory_config(albert_config_file, init_checkpoint)
    if not albert_config_file:
        raise ModelSourceError("albert_config_file is required unless albert_hub_module_handle "
                               "or a Hugging Face init_checkpoint directory is set")
    return AlbertConfig.from_json_file(albert_config_file)


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


def task_tokenizer(vocab_file: str | None, spm_model_file: str | None, do_lower_case: bool,
                   hub_handle: str | None = None,
                   init_checkpoint: str | None = None) -> FullTokenizer:
    """FullTokenizer from the flags; else the export's SentencePiece asset, or the
    `spiece.model` of an HF `init_checkpoint` directory."""
    if hub_handle and not vocab_file:
        spm_model_file = export_spm_model(hub_handle, spm_model_file)
    if not spm_model_file and not vocab_file and is_hf_checkpoint(init_checkpoint):
        spm_model_file = spm_model_of(init_checkpoint)
        if spm_model_file:
            logging.info("SentencePiece model from %s", spm_model_file)
    if not spm_model_file and not vocab_file:
        raise ModelSourceError("spm_model_file (SentencePiece) or vocab_file (WordPiece) is "
                               "required (an HF init_checkpoint directory may hold spiece.model)")
    return FullTokenizer(vocab_file, do_lower_case, spm_model_file)


def task_model_fn(build: ModelBuilder, config: AlbertConfig,
                  hub_handle: str | None = None) -> Callable[[], keras.Model]:
    """() → the task model: `build(config, None)`, or `build(config, HubEncoder(handle))`."""
    if not hub_handle:
        return lambda: build(config, None)

    def from_export() -> keras.Model:
        encoder = HubEncoder(hub_handle, name="encoder")
        model = build(config, encoder)
        logging.info("Initial weights: all %d encoder variables from the export %s; the task "
                     "head starts from its initialiser", len(encoder.weights), hub_handle)
        return model

    return from_export
