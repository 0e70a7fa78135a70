"""absl flags every run_* script shares, and the runtime set-up they drive.

The loop options (`training.loop_options`, declared once as fields) become flags here, with
the run-time set-up (strategy, GPUs, determinism) and the original's TPU plumbing flags
(faithfulness §6.1). Choices are DEFINE_enum, so a typo is a usage error rather than a silent
fallback.

Example (in a run_* script):
    >>> from albert_tf.training import flags as training_flags
    >>> training_flags.define_script_flags(RaceRunOptions, __name__)
    >>> ...
    >>> strategy = training_flags.setup_from_flags(FLAGS)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from absl import flags, logging

from albert_tf.runtime import options
from albert_tf.runtime.options import option

# The float ranges and validators, for the tools that declare flags by hand.
from albert_tf.runtime.options import (  # noqa: F401
    DROPOUT,
    FINITE,
    NON_NEGATIVE,
    POSITIVE,
    PROBABILITY,
    FloatRange,
    float_flag_names,
    float_problem,
    register_float_validators,
)
from albert_tf.training.choices import STRATEGIES
from albert_tf.training.loop_options import LoopOptions

if TYPE_CHECKING:
    import tensorflow as tf


@dataclasses.dataclass(kw_only=True)
class SetupOptions:
    """The run-time set-up every run_* script shares (read from the flags by
    `setup_from_flags`)."""

    distribution_strategy: str | None = option(
        None, "tf.distribute strategy. Default: mirrored when GPUs are visible, else "
              "one_device (tpu when --use_tpu).", choices=STRATEGIES)
    num_gpus: int | None = option(
        None, "GPUs for one_device/mirrored; 0 = CPU. Default: all visible.", lower_bound=0)
    deterministic: bool = option(
        False, "Enable TensorFlow op determinism (slower; needs --seed for repeatability).")


@dataclasses.dataclass(kw_only=True)
class TpuOptions:
    """The original's TPU plumbing flags (faithfulness §6.1)."""

    use_tpu: bool = option(False, "Run on a TPU (selects --distribution_strategy=tpu).")
    tpu_name: str | None = option(None, "Cloud TPU name or grpc:// address.")
    tpu_zone: str | None = option(None, "GCE zone of the Cloud TPU (looked up when None).")
    gcp_project: str | None = option(None, "GCP project of the Cloud TPU (looked up when None).")
    master: str | None = option(None, "TPU master address (used when --tpu_name is unset).")
    num_tpu_cores: int = option(
        8, "Kept for the original's command lines; TPUStrategy reads the core count from the "
           "TPU system.", lower_bound=1)


def define_training_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """The loop's options (`LoopOptions`: --log_steps, --dtype, --jit_compile, --seed, …) and the
    run-time set-up (`SetupOptions`): --distribution_strategy, --num_gpus, --deterministic
    (idempotent)."""
    options.define_flags(SetupOptions, flag_values, module_name=__name__)
    options.define_flags(LoopOptions, flag_values, module_name=__name__)


def define_script_flags(options_class: type, module_name: str,
                        flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """A run_* script's flags: the loop's and the run-time set-up's (`define_training_flags`),
    one per field of the script's `options_class` (belonging to `module_name`, the script), and
    the TPU plumbing; --help/--helpshort list the loop's too."""
    define_training_flags(flag_values)
    options.define_flags(options_class, flag_values, module_name=module_name)
    define_tpu_flags(flag_values)
    for flag in flag_values.get_key_flags_for_module(__name__):  # adopted by the script
        flag_values.register_key_flag_for_module(options.flag_module(module_name), flag)


def define_tpu_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """The original's TPU plumbing (`TpuOptions`): --use_tpu, --tpu_name, --tpu_zone,
    --gcp_project, --master, --num_tpu_cores (idempotent)."""
    options.define_flags(TpuOptions, flag_values, module_name=__name__)


def strategy_from_flags(flag_values: flags.FlagValues = flags.FLAGS) -> "tf.distribute.Strategy":
    """The strategy the flags name; the TPU resolver is built from the TPU flags."""
    from albert_tf.training.distribute import (  # TensorFlow on demand
        default_strategy_name,
        get_strategy,
        tpu_cluster_resolver,
    )

    name = flag_values.distribution_strategy
    use_tpu = getattr(flag_values, "use_tpu", False)
    if name is None:
        name = default_strategy_name(use_tpu)
    if use_tpu and name != "tpu":
        raise flags.ValidationError(f"--use_tpu conflicts with --distribution_strategy={name}")
    resolver = None
    if name == "tpu":
        resolver = tpu_cluster_resolver(flag_values.tpu_name, flag_values.tpu_zone,
                                        flag_values.gcp_project, flag_values.master)
    return get_strategy(name, flag_values.num_gpus, tpu_resolver=resolver)


def setup_runtime(seed: int | None, deterministic: bool) -> None:
    """Seeds every RNG Keras/TF/NumPy/Python use and optionally enables op determinism."""
    import keras
    import tensorflow as tf

    if seed is not None:
        keras.utils.set_random_seed(seed)
        logging.info("Random seed: %d", seed)
    if deterministic:
        if seed is None:
            logging.warning("--deterministic without --seed: runs differ by initialisation")
        tf.config.experimental.enable_op_determinism()
        logging.info("TensorFlow op determinism enabled")


def setup_from_flags(flag_values: flags.FlagValues = flags.FLAGS) -> "tf.distribute.Strategy":
    """setup_runtime + strategy_from_flags: call first in main()."""
    setup_runtime(flag_values.seed, flag_values.deterministic)
    return strategy_from_flags(flag_values)
