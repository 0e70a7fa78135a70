"""The loop's own flags, shared by every task's options (run_pretraining, run_classifier,
run_squad, run_race): declared once here and turned into a `LoopConfig` in one place."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from albert_tf.training.loop import LoopConfig


@dataclasses.dataclass(kw_only=True)
class LoopOptions:
    """The flags `training.flags` defines for every script; a task's options inherit them."""

    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int | None = None
    clip_norm_mode: str = "original"
    recompute_grad: bool = False

    def loop_config(self, **run_settings: Any) -> "LoopConfig":
        """A `LoopConfig` of these flags plus the task's `run_settings` (output_dir, steps,
        batch size, checkpoint cadence)."""
        # The loop needs TensorFlow; these options are read by the scripts' --help without it.
        from albert_tf.training.loop import LoopConfig

        return LoopConfig(
            log_steps=self.log_steps, gradient_accumulation_steps=self.gradient_accumulation_steps,
            jit_compile=self.jit_compile, dtype=self.dtype, clip_norm_mode=self.clip_norm_mode,
            recompute_grad=self.recompute_grad, **run_settings)
