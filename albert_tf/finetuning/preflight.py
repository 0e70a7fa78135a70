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

from albert_tf.config import AlbertConfig
from albert_tf.checkpoints.source_plan import HANDLE, plan_sources
from albert_tf.runtime.flag_errors import checkpoint_errors
from albert_tf.tokenization import FullTokenizer


class PreflightError(ValueError):
    """The run's inputs do not fit together (one line naming the files or flags)."""


def check_vocab_fits(config: AlbertConfig, tokenizer: FullTokenizer, opts: Any) -> None:
    """Raises PreflightError when the tokenizer can produce ids >= config.vocab_size; the
    message names the sources `model_source_plan.plan_sources(opts)` says they came from
    (`opts`: the run's options, or that plan)."""
    if tokenizer.vocab_size > config.vocab_size:
        sources = plan_sources(opts)
        raise PreflightError(
            f"{sources.tokenizer_source} has {tokenizer.vocab_size} pieces but vocab_size is "
            f"{config.vocab_size} in {sources.config_source}: ids >= {config.vocab_size} would "
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
    sources = plan_sources(opts)
    path = getattr(sources, flag)
    if not path:
        return
    if sources.albert_hub_module_handle and flag != HANDLE:
        raise PreflightError(
            f"--{flag}={path} and --{HANDLE}={sources.albert_hub_module_handle} "
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

