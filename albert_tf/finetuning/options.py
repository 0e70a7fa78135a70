"""What every fine-tuning run is given and gives back: the shared options and result.

The scripts' common flags (faithfulness §8.1, §9.1, §10.1) are fields here once, each an
`options.option` with its flag's help and bounds, so `options.define_flags` and
`cli.options_from_flags` treat run_classifier, run_squad and run_race the same way; a task's
options add its own (`glue.options`, `squad.options`, `race.options`). The phase switches a
task may lack (do_eval, export_dir) are read through `evaluates_checkpoints` and
`export_target`, so the run template (`finetuning.run`) asks one question for all tasks.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from albert_tf.export.choices import ServingFileOptions
from albert_tf.runtime.options import LEARNING_RATE, option, option_problems
from albert_tf.training.loop_options import EvalPollOptions, LoopOptions

if TYPE_CHECKING:
    from albert_tf.training.checkpoint_eval import PollSettings


class FineTuningError(ValueError):
    """Inconsistent options or nothing to work with (one line, no traceback in the scripts)."""


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions(LoopOptions):
    """The flags every fine-tuning script has (run_classifier, run_squad, run_race): the
    original's common ones plus the loop's."""

    output_dir: str = option(help="Checkpoints, eval_results.txt and predictions.",
                             required=True)
    albert_config_file: str | None = option(
        None, "albert_config.json of the model; required unless --albert_hub_module_handle or "
              "a Hugging Face --init_checkpoint directory (its config.json).")
    vocab_file: str | None = option(None, "WordPiece vocab.txt (ignored with --spm_model_file).")
    spm_model_file: str | None = option(
        None, "SentencePiece model; with --albert_hub_module_handle the export's is the "
              "default, with a Hugging Face --init_checkpoint directory its spiece.model.")
    init_checkpoint: str | None = option(
        None, "Initial weights: an original TF1 checkpoint, a Hugging Face directory or one of "
              "ours (every encoder variable must be present; the log states the counts).")
    albert_hub_module_handle: str | None = option(
        None, "An encoder export (python -m albert_tf.export_tfhub) or one of the original's "
              "TF1 Hub modules or a TF Model Garden TF2 Hub encoder (albert_en_*/3; unpacked "
              "directory) fine-tuned instead of config + checkpoint; "
              "its SentencePiece model is used unless --spm_model_file is given (Q21 fixed).")
    do_lower_case: bool = option(True, "Lower-case the text (preprocess_text).")
    max_seq_length: int = option(512, "Sequence length after tokenization.", lower_bound=3)
    do_train: bool = option(False, "Train.")
    do_predict: bool = option(False, "Write test predictions with the best checkpoint.")
    train_batch_size: int = option(32, "Global training batch.", lower_bound=1)
    predict_batch_size: int = option(8, "Predict batch.", lower_bound=1)
    learning_rate: float = option(5e-5, "Peak learning rate.", float_range=LEARNING_RATE)
    save_checkpoints_steps: int = option(1000, "Checkpoint every this many steps.",
                                         lower_bound=1)
    iterations_per_loop: int = option(
        1000, "Steps per call of the compiled loop (at most save_checkpoints_steps).",
        lower_bound=1)
    # Length-bucketed batches (`bucketing`); None: on, except on TPU.
    bucket_by_length: bool | None = option(
        None, "Pad each batch to the shortest multiple of 16 that holds its examples (grouped "
              "by length) instead of to max_seq_length: the same eval and predict results, "
              "faster. Default: on, except on TPU (static shapes). Training batches then group "
              "examples of similar length; --nobucket_by_length keeps the original's batch "
              "order. SQuAD v1 always pads (Q22).")

    def problems(self) -> list[str]:
        """What is wrong with these options, one line each (`option_problems`: choices, bounds,
        float ranges; subclasses add their cross-field rules)."""
        return option_problems(self)

    def phase_switches(self) -> dict[str, Any]:
        """The phases these options can ask for, in run order: {switch flag: value}."""
        return {"do_train": self.do_train, "do_predict": self.do_predict}

    @property
    def evaluates_checkpoints(self) -> bool:
        """Whether a dev split is evaluated apart from prediction (--do_eval)."""
        return False

    def follows_training(self) -> bool:
        """Whether evaluation follows a trainer's checkpoints as a side-car (never, unless
        the task has --do_eval: `FixedStepOptions`)."""
        return False

    @property
    def export_target(self) -> str | None:
        """Where the export phase writes (--export_dir), None for no export."""
        return None


@dataclasses.dataclass(kw_only=True)
class FixedStepOptions(FineTuningOptions, EvalPollOptions):
    """What run_classifier and run_race add: a step budget (not epochs, as run_squad), a dev
    split evaluated apart from prediction, and side-car evaluation (`EvalPollOptions`)."""

    do_eval: bool = option(
        False, "Evaluate every saved checkpoint; keep the best. Without --do_train: follow a "
               "trainer's checkpoints in --output_dir until --train_step (0: evaluate what is "
               "there once).")
    eval_batch_size: int = option(8, "Eval batch.", lower_bound=1)
    train_step: int = option(1000, "Training steps (also the decay horizon).", lower_bound=0)
    warmup_step: int = option(0, "Linear warmup steps (0: none).", lower_bound=0)

    def problems(self) -> list[str]:
        found = super().problems()
        if self.do_train and self.train_step < 1:
            found.append(f"train_step must be >= 1 with do_train, got {self.train_step}")
        return found

    def phase_switches(self) -> dict[str, Any]:
        switches = super().phase_switches()
        return {"do_train": switches.pop("do_train"), "do_eval": self.do_eval, **switches}

    @property
    def evaluates_checkpoints(self) -> bool:
        return self.do_eval

    def poll_settings(self) -> "PollSettings":
        """--eval_poll_secs / --eval_timeout_secs (ValueError naming the flag if not > 0)."""
        from albert_tf.training.checkpoint_eval import PollSettings  # TensorFlow on demand

        return PollSettings(self.eval_poll_secs, self.eval_timeout_secs)

    def follows_training(self) -> bool:
        """--do_eval without --do_train follows a training run in output_dir to
        --train_step, as the original; --train_step=0 evaluates what is there once."""
        return self.do_eval and not self.do_train and self.train_step > 0


@dataclasses.dataclass(kw_only=True)
class ExportOptions(FineTuningOptions, ServingFileOptions):
    """What run_classifier and run_squad (v1) add: the best weights exported as a serving
    SavedModel with a TFLite file (`export.tflite` checks the quantization), the serving
    graph and optionally an OpenVINO IR beside it (`ServingFileOptions`)."""

    export_dir: str | None = option(
        None, "Export a serving SavedModel of model.ckpt-best here (serialized tf.Examples in), "
              "with albert_model.tflite (int32 token inputs), serving/ (the frozen serving graph "
              "for engines: token inputs, any batch, bfloat16 under --dtype=bfloat16, else "
              "float32) and serving.json beside it: albert_tf.serving.load_serving(export_dir) "
              "runs any of them.")

    def phase_switches(self) -> dict[str, Any]:
        return {**super().phase_switches(), "export_dir": self.export_dir}

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
    num_train_steps: int = 0  # the schedule's steps (0 without --do_train)
