"""run_classifier's options (faithfulness §8.1 names and defaults): each field is its flag
(`options.option`); importable without TensorFlow (fast --help)."""

from __future__ import annotations

import dataclasses

from albert_tf.finetuning.options import ExportOptions, FixedStepOptions
from albert_tf.glue.examples import TASK_NAMES
from albert_tf.runtime.options import FloatRange, option, reworded
from albert_tf.training.choices import OPTIMIZER_NAMES
from albert_tf.training.loop_options import CheckpointSettings


@dataclasses.dataclass(kw_only=True)
class GlueRunOptions(FixedStepOptions, ExportOptions):
    """run_classifier's flags; the shared fine-tuning and loop flags (output_dir,
    init_checkpoint, do_*, batch sizes, steps, export_dir, …) are inherited."""

    data_dir: str = option(help="GLUE data directory: one folder per task (MRPC/, MNLI/, ...).",
                           required=True)
    task_name: str = option(help="The task (case-insensitive).", choices=TASK_NAMES,
                            case_sensitive=False, required=True)
    cached_dir: str | None = option(
        None, "Where <task>_{train,eval,predict}.tf_record are cached (default: --output_dir). "
              "A file here built with other settings is refused; one without a settings sidecar "
              "(e.g. the original's) is reused with a warning.")
    keep_checkpoint_max: int = reworded(
        CheckpointSettings, "keep_checkpoint_max",
        "Accepted for the original's command lines; unused there and here (Q19): all "
        "checkpoints are kept until the eval loop prunes them.")
    optimizer: str = option("adamw", "adamw or lamb.", choices=OPTIMIZER_NAMES)
    threshold_to_export: float = option(
        float("nan"), "If set, a constant 'threshold' output is added to the serving signature.",
        float_range=FloatRange(unset=True))
