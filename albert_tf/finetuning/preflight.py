"""Checks a fine-tuning run makes once its config and tokenizer exist, before any feature
cache, model or checkpoint is built or written.

A vocabulary larger than the config's `vocab_size` produces ids the embedding table does
not have: on CPU training dies later in `indices[…] = 1201 is not in [0, 1000)`, on GPU the
lookup silently returns zeros. Here it is one line naming both files.

Example:
    >>> check_vocab_fits(config, tokenizer, opts)  # opts: the run's options (flags)
"""

from __future__ import annotations

from typing import Any

from albert_tf.config import AlbertConfig
from albert_tf.tokenization import FullTokenizer


class PreflightError(ValueError):
    """The run's inputs do not fit together (one line naming the files or flags)."""


def config_source(opts: Any) -> str:
    """How the error names where the config came from."""
    handle = getattr(opts, "albert_hub_module_handle", None)
    if handle:
        return f"the config of --albert_hub_module_handle={handle}"
    return f"--albert_config_file={opts.albert_config_file}"


def tokenizer_source(opts: Any) -> str:
    """How the error names where the vocabulary came from (same precedence as
    `model_source.task_tokenizer`: explicit flags, else the export's SentencePiece model)."""
    vocab_file = getattr(opts, "vocab_file", None)
    spm_model_file = getattr(opts, "spm_model_file", None)
    if spm_model_file:
        return f"--spm_model_file={spm_model_file}"
    if vocab_file:
        return f"--vocab_file={vocab_file}"
    return f"the SentencePiece model of --albert_hub_module_handle={opts.albert_hub_module_handle}"


def check_vocab_fits(config: AlbertConfig, tokenizer: FullTokenizer, opts: Any) -> None:
    """Raises PreflightError when the tokenizer can produce ids >= config.vocab_size."""
    if tokenizer.vocab_size > config.vocab_size:
        raise PreflightError(
            f"{tokenizer_source(opts)} has {tokenizer.vocab_size} pieces but vocab_size is "
            f"{config.vocab_size} in {config_source(opts)}: ids >= {config.vocab_size} would "
            f"index past the embedding table; use the config and vocabulary of one model")
