"""What every fine-tuning run is given and gives back: the shared options and result.

The scripts' common flags (faithfulness §8.1, §9.1, §10.1) are fields here once, so
`cli.options_from_flags` fills them the same way for run_classifier, run_squad and run_race;
a task's options add its own (`GlueRunOptions`, `SquadRunOptions`, `RaceRunOptions`). The
phase switches a task may lack (do_eval, export_dir) are read through `evaluates_checkpoints`
and `export_target`, so the run template (`finetuning.run`) asks one question for all tasks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.training.checkpoint_eval import PollSettings
from albert_tf.training.loop_options import LoopOptions


class FineTuningError(ValueError):
    """Inconsistent options or nothing to work with (one line, no traceback in the scripts)."""


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions(LoopOptions):
    """The flags every fine-tuning script has (run_classifier, run_squad, run_race): the
    original's common ones plus the loop's."""

    output_dir: str
    albert_config_file: str | None = None
    vocab_file: str | None = None
    spm_model_file: str | None = None
    init_checkpoint: str | None = None
    albert_hub_module_handle: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    # Length-bucketed batches (`bucketing`); None: on, except on TPU.
    bucket_by_length: bool | None = None

    @property
    def evaluates_checkpoints(self) -> bool:
        """Whether a dev split is evaluated apart from prediction (--do_eval)."""
        return False

    @property
    def export_target(self) -> str | None:
        """Where the export phase writes (--export_dir), None for no export."""
        return None


@dataclasses.dataclass(kw_only=True)
class FixedStepOptions(FineTuningOptions):
    """What run_classifier and run_race add: a step budget (not epochs, as run_squad) and
    a dev split evaluated apart from prediction."""

    do_eval: bool = False
    eval_batch_size: int = 8
    train_step: int = 1000
    warmup_step: int = 0
    # Side-car evaluation (--do_eval without --do_train): `training.checkpoint_eval`.
    eval_poll_secs: float = 60.0
    eval_timeout_secs: float = 3600.0

    @property
    def evaluates_checkpoints(self) -> bool:
        return self.do_eval

    def poll_settings(self) -> PollSettings:
        """--eval_poll_secs / --eval_timeout_secs (ValueError naming the flag if not > 0)."""
        return PollSettings(self.eval_poll_secs, self.eval_timeout_secs)

    def follows_training(self) -> bool:
        """--do_eval without --do_train follows a training run in output_dir to
        --train_step, as the original; --train_step=0 evaluates what is there once."""
        return self.do_eval and not self.do_train and self.train_step > 0


@dataclasses.dataclass(kw_only=True)
class ExportOptions(FineTuningOptions):
    """What run_classifier and run_squad (v1) add: the best weights exported as a serving
    SavedModel with a TFLite file (`export.tflite` checks the quantization), the serving
    graph and optionally an OpenVINO IR beside it."""

    export_dir: str | None = None
    tflite_quantization: str = "none"  # ours: the TFLite file beside the export
    openvino_ir: bool = False  # ours: the OpenVINO IR beside the export

    @property
    def export_target(self) -> str | None:
        return self.export_dir


@dataclasses.dataclass
class FineTuningResult:
    """What a run did, in every task: last training logs, every eval, the best, the warm
    start's report. Tasks add their outputs (prediction files, export directory, …)."""

    train_logs: dict[str, float] = dataclasses.field(default_factory=dict)
    eval_results: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    best_step: int | None = None
    best_results: dict[str, Any] | None = None
    restore_report: Any = None  # finetuning.warm_start.RestoreReport of --init_checkpoint
