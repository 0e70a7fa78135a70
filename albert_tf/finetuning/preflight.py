"""Checks a run makes once its config and tokenizer exist, before any feature cache, model
or checkpoint is built or written.

* `check_vocab_fits`: a vocabulary larger than the config's `vocab_size` produces ids the
  embedding table does not have: on CPU training dies later in `indices[…] = 1201 is not in
  [0, 1000)`, on GPU the lookup silently returns zeros. Here it is one line naming both files.
* `check_init_checkpoint`: a missing `--init_checkpoint`, or one that does not fit the model
  (another size, another head), is otherwise found at the warm start, after the feature
  caches were built (minutes on MNLI). The task model is built inside a throwaway graph —
  variables there are graph nodes whose initialisers never run, so the check allocates no
  weights (an xxlarge model costs seconds, not 1 GB) — and compared with the checkpoint's
  names and shapes by the same strict code the warm start uses, which keeps one description
  of the model (its own code) instead of a second table of shapes.

Example:
    >>> check_vocab_fits(config, tokenizer, opts)  # opts: the run's options (flags)
    >>> check_init_checkpoint(model_fn, opts)       # model_fn: what the Trainer will build
"""

from __future__ import annotations

import random
from typing import Any, Callable

from albert_tf.checkpoints.keras_hub_files import is_keras_hub_preset
from albert_tf.checkpoints.model_garden_files import is_model_garden_export
from albert_tf.checkpoints.tf1_hub_files import is_tf1_hub_module
from albert_tf.config import AlbertConfig
from albert_tf.runtime.flag_errors import checkpoint_errors
from albert_tf.tokenization import FullTokenizer


class PreflightError(ValueError):
    """The run's inputs do not fit together (one line naming the files or flags)."""


def _hf_init_checkpoint(opts: Any) -> str | None:
    """--init_checkpoint when it is a Hugging Face directory (config and tokenizer source)."""
    from albert_tf.checkpoints import is_hf_checkpoint

    path = getattr(opts, "init_checkpoint", None)
    return path if is_hf_checkpoint(path) else None


def config_source(opts: Any) -> str:
    """How the error names where the config came from."""
    handle = getattr(opts, "albert_hub_module_handle", None)
    if handle:
        return f"the config of --albert_hub_module_handle={handle}"
    if not opts.albert_config_file and _hf_init_checkpoint(opts):
        return f"the config.json of --init_checkpoint={opts.init_checkpoint}"
    if not opts.albert_config_file and is_tf1_hub_module(getattr(opts, "init_checkpoint", None)):
        return f"the albert_config.json of --init_checkpoint={opts.init_checkpoint}"
    if not opts.albert_config_file and is_model_garden_export(getattr(opts, "init_checkpoint",
                                                                      None)):
        return f"the config inferred from --init_checkpoint={opts.init_checkpoint}"
    if not opts.albert_config_file and is_keras_hub_preset(getattr(opts, "init_checkpoint", None)):
        return f"the config.json of --init_checkpoint={opts.init_checkpoint}"
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
    if getattr(opts, "albert_hub_module_handle", None):
        return ("the SentencePiece model of "
                f"--albert_hub_module_handle={opts.albert_hub_module_handle}")
    if is_tf1_hub_module(getattr(opts, "init_checkpoint", None)) or is_model_garden_export(
            getattr(opts, "init_checkpoint", None)):
        return f"the SentencePiece model of --init_checkpoint={opts.init_checkpoint}"
    if is_keras_hub_preset(getattr(opts, "init_checkpoint", None)):
        return f"the vocabulary.spm of --init_checkpoint={opts.init_checkpoint}"
    return f"the spiece.model of --init_checkpoint={opts.init_checkpoint}"


def check_vocab_fits(config: AlbertConfig, tokenizer: FullTokenizer, opts: Any) -> None:
    """Raises PreflightError when the tokenizer can produce ids >= config.vocab_size."""
    if tokenizer.vocab_size > config.vocab_size:
        raise PreflightError(
            f"{tokenizer_source(opts)} has {tokenizer.vocab_size} pieces but vocab_size is "
            f"{config.vocab_size} in {config_source(opts)}: ids >= {config.vocab_size} would "
            f"index past the embedding table; use the config and vocabulary of one model")


def check_init_checkpoint(build_model: Callable[[], Any], opts: Any,
                          check: Callable[[Any, str], Any] | None = None,
                          flag: str = "init_checkpoint") -> None:
    """Raises PreflightError when `--init_checkpoint` (attribute `flag` of `opts`; also
    "albert_hub_module_handle" for a TF1 Hub module) is missing, unreadable or does not fit
    the model `build_model()` makes; nothing when it is unset.

    `check(model, path)` is the warm start's dry run (default: fine-tuning's: every
    encoder variable required, the head optional).
    """
    path = getattr(opts, flag, None)
    if not path:
        return
    if getattr(opts, "albert_hub_module_handle", None) and flag != "albert_hub_module_handle":
        raise PreflightError(
            f"--{flag}={path} and --albert_hub_module_handle={opts.albert_hub_module_handle} "
            "both give the initial weights; pass one of them")
    import tensorflow as tf

    from albert_tf.checkpoints import checkpoint_kind, head_parts, warm_start

    if check is None:
        def check(model: Any, path: str) -> Any:
            return warm_start(model, path, head_parts(model), dry_run=True)
    with checkpoint_errors(flag, path, PreflightError):
        checkpoint_kind(path)  # a missing or unreadable path fails before any model is built
    # Variables without values: no weights are allocated. Keras draws each initializer's
    # seed from Python's `random`; its state is put back so the run's own model is
    # initialised exactly as without the check (a seeded run gives the same numbers).
    random_state = random.getstate()
    try:
        with tf.Graph().as_default():
            model = build_model()
            with checkpoint_errors(flag, path, PreflightError):
                check(model, path)
    finally:
        random.setstate(random_state)

