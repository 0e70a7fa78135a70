"""The loop's options, shared by every run_* script (run_pretraining, run_classifier, run_squad,
run_race), each declared once: `LoopSettings` is also the base of `training.loop.LoopConfig`,
and `options.define_flags` makes the scripts' flags of them."""

from __future__ import annotations

import dataclasses

from albert_tf.runtime.options import POSITIVE, option
from albert_tf.training.choices import CLIP_NORM_MODES, DTYPE_POLICIES

@dataclasses.dataclass(kw_only=True)
class LoopSettings:
    """What the loop itself reads (`LoopConfig` inherits them; the scripts' options too)."""

    log_steps: int = option(100, "Log (and write TensorBoard scalars) every this many steps.",
                            lower_bound=1)
    gradient_accumulation_steps: int = option(
        1, "Split each global batch into this many micro-batches per replica and sum their "
           "gradients before one update (same result, less memory).", lower_bound=1)
    jit_compile: bool | None = option(
        None, "XLA-compile the forward/backward pass (--nojit_compile: the tf.function graph). "
              "Default: XLA where it is the faster on this CPU kind for --dtype and the run's "
              "steps repay its compiles (albert_tf/runtime/execution_rules.py); the graph on GPUs.")
    dtype: str = option(
        "float32", "Compute dtype of training, eval and predict: float32, or mixed float16 "
                   "(dynamic loss scaling) / bfloat16. Variables, LayerNorm, softmax, logits and "
                   "losses stay float32. bfloat16 is faster only on CPUs with bf16 units "
                   "(AVX512-BF16/AMX) or accelerators; a warning says when the CPU has none.",
        choices=list(DTYPE_POLICIES))
    clip_norm_mode: str = option(
        "original", "Global norm of the clip at 1.0: 'original' counts an embedding gradient "
                    "once per token occurrence where the original does (off TPU: the token-type "
                    "table always, the word table when fine-tuning; Q35); 'dense' uses the norm "
                    "of the summed gradient everywhere.", choices=CLIP_NORM_MODES)
    recompute_grad: bool = option(
        False, "Recompute each transformer block's activations in the backward pass instead of "
               "keeping them: much less memory at long sequences, for about one more forward "
               "pass of time.")


@dataclasses.dataclass(kw_only=True)
class CheckpointSettings:
    """How many checkpoints a run keeps: said here once; the scripts' flags reword it
    (`options.reworded`) and `LoopConfig` inherits it."""

    keep_checkpoint_max: int = option(5, "Checkpoints kept.", lower_bound=1)


@dataclasses.dataclass(kw_only=True)
class LoopRunSettings(CheckpointSettings):
    """What each task sets from its own options (`LoopConfig`'s defaults for a library caller,
    and its bounds, which `LoopConfig.validate` checks)."""

    num_train_steps: int = option(0, "Optimizer steps (0: evaluation only).", lower_bound=0)
    train_batch_size: int = option(32, "Global batch per optimizer step.", lower_bound=1)
    iterations_per_loop: int = option(1000, "Steps per call of the compiled loop.",
                                      lower_bound=1)
    save_checkpoints_steps: int = option(1000, "Checkpoint every this many steps.",
                                         lower_bound=1)


@dataclasses.dataclass(kw_only=True)
class LoopOptions(LoopSettings):
    """The loop flags every script has; a task's options inherit them
    (`LoopConfig.from_options` takes the `LoopSettings` part)."""

    seed: int | None = option(None, "Seeds Python, NumPy, TensorFlow/Keras initialisation, "
                                    "dropout and the input pipeline. Default: unseeded.")


@dataclasses.dataclass(kw_only=True)
class EvalPollOptions:
    """Side-car evaluation (--do_eval without --do_train: `training.checkpoint_eval`)."""

    eval_poll_secs: float = option(
        60.0, "With --do_eval and no --do_train: seconds between looks for a new checkpoint of "
              "the training run in --output_dir.", float_range=POSITIVE)
    eval_timeout_secs: float = option(
        3600.0, "With --do_eval and no --do_train: give up (error, exit status 1) when no new "
                "checkpoint appeared for this many seconds (the original waits forever).",
        float_range=POSITIVE)
