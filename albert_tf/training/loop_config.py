"""A training run's settings (`LoopConfig`) and the hooks a run calls (`Callback`).

Apart from the `Trainer` that reads them (`training.loop`) so that a script, a test or the
paper harness can build and check a run's settings without the loop's machinery.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from albert_tf.runtime.options import option_problems
from albert_tf.training.loop_options import LoopRunSettings, LoopSettings


@dataclasses.dataclass
class LoopConfig(LoopSettings, LoopRunSettings):
    """Settings of a training run (each run_* script fills them from its flags, faithfulness §6.1);
    the options every script shares (log_steps, dtype, jit_compile, …) are `LoopSettings`', the
    task's own (steps, batch, checkpoints) `LoopRunSettings`': their defaults and bounds are
    declared there, once, and `validate` checks the bounds.

    `train_batch_size` is the global batch of one optimizer step; with
    `gradient_accumulation_steps` = k it is computed as k micro-batches per replica.
    `clip_norm_mode`: "original" counts the embedding-lookup gradients per token occurrence
    where the original does (Q35), "dense" uses the summed gradient's norm.
    `recompute_grad`: recompute each transformer block's activations in the backward pass
    (less memory, more time) in every layer of the model that offers it.
    """

    output_dir: str
    # How many padded lengths the training batches come in (length buckets): XLA compiles
    # once per length, which `jit_compile=None` weighs (execution_rules.use_xla).
    num_input_lengths: int = 1
    clip_norm: float | None = 1.0
    # Variable-path regexes left untrained (the original's `excluded_tvars`, Q16 fixed).
    frozen_variable_patterns: Sequence[str] = ()

    @classmethod
    def from_options(cls, options: LoopSettings, **run_settings: Any) -> "LoopConfig":
        """The `LoopSettings` part of a script's `options` plus the task's `run_settings`
        (output_dir, steps, batch size, checkpoint cadence)."""
        shared = {field.name: getattr(options, field.name)
                  for field in dataclasses.fields(LoopSettings)}
        return cls(**shared, **run_settings)

    def validate(self, num_replicas: int = 1) -> None:
        """Raises ValueError naming the first inconsistent setting: outside its option's
        declared choices or bounds (`LoopSettings`, `LoopRunSettings`), or a batch the replicas
        cannot split."""
        problems = option_problems(self)
        if problems:
            raise ValueError(f"LoopConfig {problems[0]}")
        per_step = num_replicas * self.gradient_accumulation_steps
        if self.train_batch_size % per_step:
            raise ValueError(
                f"train_batch_size ({self.train_batch_size}) must be divisible by replicas × "
                f"gradient_accumulation_steps ({num_replicas} × {self.gradient_accumulation_steps})")


class Callback:
    """Hooks called on every worker; override what you need. `self.trainer` is set by the
    Trainer the callback is given to."""

    trainer: Any = None  # the `training.loop.Trainer` running it (not imported: no cycle)

    def on_log(self, step: int, logs: Mapping[str, float]) -> None:
        """After each logging window."""

    def on_checkpoint(self, step: int, path: str | None) -> None:
        """After a checkpoint is written (path is None on non-chief workers)."""
