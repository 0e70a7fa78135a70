"""run_race's options (faithfulness §10.1 names and defaults): each field is its flag
(`options.option`); importable without TensorFlow (fast --help)."""

from __future__ import annotations

import dataclasses

from albert_tf.finetuning.options import FineTuningOptions, FixedStepOptions
from albert_tf.runtime.options import DROPOUT, LEARNING_RATE, option, reworded
from albert_tf.training.loop_options import CheckpointSettings


@dataclasses.dataclass(kw_only=True)
class RaceRunOptions(FixedStepOptions):
    """run_race's flags plus the loop's shared ones; the original's defaults differ from the
    other tasks' for the phases, the learning rate and the step budget."""

    data_dir: str = option(help="Directory holding RACE/{train,dev,test}/{middle,high}/.",
                           required=True)
    task_name: str = option("race", "The task (the only one).", choices=("race",),
                            case_sensitive=False)
    train_file: str | None = option(
        None, "Training feature TFRecord cache, built when absent "
              "(default: output_dir/train.tf_record).")
    eval_file: str | None = option(
        None, "Dev feature TFRecord cache (default: output_dir/eval.tf_record).")
    predict_file: str | None = option(
        None, "Test feature TFRecord cache (default: output_dir/predict.tf_record; unused by the "
              "original, Q28).")
    dropout_prob: float = option(0.1, "Dropout before the option-scoring layer.",
                                 float_range=DROPOUT)
    max_seq_length: int = reworded(FineTuningOptions, "max_seq_length",
                                   "Length of each option's sequence.", lower_bound=4)
    max_qa_length: int = option(128, "Question+option tokens kept (the last ones, Q29).",
                                lower_bound=1)
    num_keep_checkpoint: int = reworded(CheckpointSettings, "keep_checkpoint_max",
                                        "Numbered checkpoints kept.")
    high_only: bool = option(False, "Read only the high-school articles.")
    middle_only: bool = option(False, "Read only the middle-school articles.")
    do_train: bool = option(True, "Train.")
    do_eval: bool = option(
        True, "Evaluate every saved checkpoint on dev; keep the best. Without --do_train: "
              "follow a trainer's checkpoints in --output_dir until --train_step (0: evaluate "
              "what is there once).")
    do_predict: bool = reworded(FineTuningOptions, "do_predict",
                                "Predict the test set with the best checkpoint.")
    train_batch_size: int = reworded(FineTuningOptions, "train_batch_size",
                                     "Global training batch, in questions.")
    eval_batch_size: int = reworded(FixedStepOptions, "eval_batch_size", "Eval batch, in questions.")
    predict_batch_size: int = reworded(FineTuningOptions, "predict_batch_size",
                                       "Predict batch, in questions.")
    learning_rate: float = option(1e-5, "Peak learning rate (AdamW).", float_range=LEARNING_RATE)
    train_step: int = option(12000, "Training steps (also the decay horizon).", lower_bound=0)
    warmup_step: int = option(1000, "Linear warmup steps.", lower_bound=0)
    save_checkpoints_steps: int = option(100, "Checkpoint every this many steps.", lower_bound=1)
