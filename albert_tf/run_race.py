"""RACE fine-tuning: train, evaluate every checkpoint, predict the test set.

The original's run_race flags and defaults (faithfulness §10.1), plus the training loop's shared
flags (--distribution_strategy, --num_gpus, --dtype, --jit_compile,
--gradient_accumulation_steps, --seed, --deterministic, --log_steps, --clip_norm_mode,
--recompute_grad) and side-car evaluation's --eval_poll_secs, --eval_timeout_secs.

    albert-run-race --data_dir=data --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model \
        --init_checkpoint=albert_base/model.ckpt-best --output_dir=out/race \
        --do_train --do_eval --do_predict --max_seq_length=512 --max_qa_length=128 \
        --train_batch_size=32 --learning_rate=1e-5 --train_step=12000 --warmup_step=1000

Data: data_dir/RACE/{train,dev,test}/{middle,high}/ in the official layout (one JSON article
per *.txt) or the original's (all.txt, one article per line). --do_eval evaluates each saved
checkpoint into output_dir/eval_results.txt (accuracy overall, middle, high) and keeps the
best as model.ckpt-best; --do_predict writes output_dir/predictions.tsv (id, question index,
letter) from it — test answers are optional — and predict_results.txt when they are present.
--nodo_train --do_eval is the original's side-car evaluator: it follows a trainer's
checkpoints in output_dir until --train_step (--eval_poll_secs, --eval_timeout_secs).
Bad input stops the run with one line naming the file, and a non-zero exit.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import flags

from albert_tf import cli
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# ----- the original's flags (faithfulness §10.1) -----
flags.DEFINE_string("data_dir", None, "Directory holding RACE/{train,dev,test}/{middle,high}/.")
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model; required unless --albert_hub_module_handle "
                    "or a Hugging Face --init_checkpoint directory (its config.json).")
flags.DEFINE_enum("task_name", "race", ["race"], "The task (the only one).", case_sensitive=False)
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (ignored with --spm_model_file).")
flags.DEFINE_string("train_file", None,
                    "Training feature TFRecord cache, built when absent "
                    "(default: output_dir/train.tf_record).")
flags.DEFINE_string("eval_file", None,
                    "Dev feature TFRecord cache (default: output_dir/eval.tf_record).")
flags.DEFINE_string("predict_file", None,
                    "Test feature TFRecord cache (default: output_dir/predict.tf_record; "
                    "unused by the original, Q28).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model; with --albert_hub_module_handle the export's is the "
                    "default, with a Hugging Face --init_checkpoint directory its spiece.model.")
flags.DEFINE_string("output_dir", None, "Checkpoints, eval_results.txt, predictions.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial weights: an original TF1 checkpoint, a Hugging Face directory or "
                    "one of ours (every encoder variable must be present; the log states the "
                    "counts).")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An exported encoder SavedModel or one of the original's TF1 Hub modules "
                    "(unpacked directory) instead of config + checkpoint.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (preprocess_text).")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout before the option-scoring layer.")
flags.DEFINE_integer("max_seq_length", 512, "Length of each option's sequence.", lower_bound=4)
flags.DEFINE_integer("max_qa_length", 128,
                     "Question+option tokens kept (the last ones, Q29).", lower_bound=1)
flags.DEFINE_integer("num_keep_checkpoint", 5, "Numbered checkpoints kept.", lower_bound=1)
flags.DEFINE_bool("high_only", False, "Read only the high-school articles.")
flags.DEFINE_bool("middle_only", False, "Read only the middle-school articles.")
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", True,
                  "Evaluate every saved checkpoint on dev; keep the best. Without --do_train: "
                  "follow a trainer's checkpoints in --output_dir until --train_step (0: "
                  "evaluate what is there once).")
flags.DEFINE_bool("do_predict", False, "Predict the test set with the best checkpoint.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch, in questions.", lower_bound=1)
flags.DEFINE_integer("eval_batch_size", 8, "Eval batch, in questions.", lower_bound=1)
flags.DEFINE_integer("predict_batch_size", 8, "Predict batch, in questions.", lower_bound=1)
flags.DEFINE_float("learning_rate", 1e-5, "Peak learning rate (AdamW).")
flags.DEFINE_integer("train_step", 12000, "Training steps (also the decay horizon).", lower_bound=0)
flags.DEFINE_integer("warmup_step", 1000, "Linear warmup steps.", lower_bound=0)
flags.DEFINE_integer("save_checkpoints_steps", 100, "Checkpoint every this many steps.",
                     lower_bound=1)
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per call of the compiled loop (at most save_checkpoints_steps).",
                     lower_bound=1)
training_flags.define_training_flags()
training_flags.define_bucketing_flag()
training_flags.define_eval_poll_flags()
training_flags.define_tpu_flags()
# The loop's flags (--dtype, --jit_compile, --seed, ...) are listed by --help/--helpshort too.
flags.adopt_module_key_flags(training_flags)
flags.mark_flags_as_required(["data_dir", "output_dir"])
flags.register_multi_flags_validator(
    ["high_only", "middle_only"], lambda values: not (values["high_only"] and values["middle_only"]),
    "--high_only and --middle_only exclude each other")
training_flags.register_float_validators({
    **training_flags.EVAL_POLL_RANGES,
    "learning_rate": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
    "dropout_prob": training_flags.DROPOUT})


def run():
    """FLAGS → RaceRunOptions → albert_tf.race.runner.run."""
    from albert_tf.race.runner import RaceRunOptions, run as run_race

    return cli.run_from_flags(RaceRunOptions, run_race)


def main(argv: Sequence[str]) -> None:
    cli.run_script("run_race", argv, run)


def console_main() -> None:
    """`albert-run-race` (console script), `python -m albert_tf.run_race`, and in a
    clone the original's `python run_race.py` (a shim over this module)."""
    cli.start("run_race", run, __name__)


if __name__ == "__main__":
    console_main()
