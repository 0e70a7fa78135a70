r"""GLUE fine-tuning: train, evaluate every checkpoint, predict submission files, export.

The original's run_classifier flags and defaults (faithfulness §8.1), plus the training loop's
shared flags (--distribution_strategy, --num_gpus, --dtype, --jit_compile,
--gradient_accumulation_steps, --seed, --deterministic, --log_steps, --clip_norm_mode,
--recompute_grad) and side-car evaluation's --eval_poll_secs, --eval_timeout_secs.

    albert-run-classifier --task_name=MRPC --data_dir=glue_data \
        --albert_config_file=albert_config.json --spm_model_file=30k-clean.model \
        --init_checkpoint=albert_base/model.ckpt-best --output_dir=out/mrpc \
        --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 \
        --learning_rate=2e-5 --train_step=800 --warmup_step=200 --save_checkpoints_steps=100

--do_eval evaluates each saved checkpoint into output_dir/eval_results.txt and keeps the best
by the task's metric as model.ckpt-best; --do_predict writes test_results.tsv,
submit_results.tsv and the GLUE server file (<Task>.tsv) from it. --do_eval without
--do_train is the original's side-car evaluator: it follows a trainer's checkpoints in
output_dir until --train_step (--eval_poll_secs, --eval_timeout_secs). Bad input stops the
run with one line naming the file and line, and a non-zero exit.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import flags

from albert_tf import cli
from albert_tf.glue.examples import TASK_NAMES
from albert_tf.training import flags as training_flags
from albert_tf.training.choices import OPTIMIZER_NAMES

FLAGS = flags.FLAGS

# ----- the original's flags (faithfulness §8.1) -----
flags.DEFINE_string("data_dir", None, "GLUE data directory: one folder per task (MRPC/, MNLI/, ...).")
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model; required unless --albert_hub_module_handle "
                    "or a Hugging Face --init_checkpoint directory (its config.json).")
flags.DEFINE_enum("task_name", None, list(TASK_NAMES), "The task (case-insensitive).",
                  case_sensitive=False)
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (ignored with --spm_model_file).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model (the English ALBERTs); default with a Hugging Face "
                    "--init_checkpoint directory: its spiece.model.")
flags.DEFINE_string("output_dir", None, "Checkpoints, eval_results.txt, predictions.")
flags.DEFINE_string("cached_dir", None,
                    "Where <task>_{train,eval,predict}.tf_record are cached (default: "
                    "--output_dir). A file here built with other settings is refused; one "
                    "without a settings sidecar (e.g. the original's) is reused with a warning.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial weights: an original TF1 checkpoint, a Hugging Face directory or "
                    "one of ours (every encoder variable must be present; the log states the "
                    "counts).")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An encoder export (python -m albert_tf.export_tfhub) or one of the original's "
                    "TF1 Hub modules (unpacked directory) fine-tuned instead of config + "
                    "checkpoint; its SentencePiece model is used unless --spm_model_file is "
                    "given (Q21 fixed).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (preprocess_text).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length after tokenization.", lower_bound=3)
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_eval", False,
                  "Evaluate every saved checkpoint; keep the best. Without --do_train: follow "
                  "a trainer's checkpoints in --output_dir until --train_step (0: evaluate "
                  "what is there once).")
flags.DEFINE_bool("do_predict", False, "Write test predictions with the best checkpoint.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch.", lower_bound=1)
flags.DEFINE_integer("eval_batch_size", 8, "Eval batch.", lower_bound=1)
flags.DEFINE_integer("predict_batch_size", 8, "Predict batch.", lower_bound=1)
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("train_step", 1000, "Training steps (also the decay horizon).", lower_bound=0)
flags.DEFINE_integer("warmup_step", 0, "Linear warmup steps (0: none).", lower_bound=0)
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint every this many steps.",
                     lower_bound=1)
flags.DEFINE_integer("keep_checkpoint_max", 5,
                     "Accepted for the original's command lines; unused there and here (Q19): "
                     "all checkpoints are kept until the eval loop prunes them.", lower_bound=1)
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per call of the compiled loop (at most save_checkpoints_steps).",
                     lower_bound=1)
flags.DEFINE_enum("optimizer", "adamw", list(OPTIMIZER_NAMES), "adamw or lamb.")
flags.DEFINE_string("export_dir", None, "Export a serving SavedModel of model.ckpt-best here "
                    "(serialized tf.Examples in), with albert_model.tflite (int32 token inputs), "
                    "serving/ (the frozen serving graph for engines: token inputs, any batch, "
                    "bfloat16 under --dtype=bfloat16, else float32) and serving.json beside it: "
                    "albert_tf.export.load_serving(export_dir) runs any of them.")
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "If set, a constant 'threshold' output is added to the serving signature.")
training_flags.define_training_flags()
training_flags.define_bucketing_flag()
training_flags.define_tflite_flag()
training_flags.define_openvino_flag()
training_flags.define_eval_poll_flags()
training_flags.define_tpu_flags()
# The loop's flags (--dtype, --jit_compile, --seed, ...) are listed by --help/--helpshort too.
flags.adopt_module_key_flags(training_flags)
flags.mark_flags_as_required(["data_dir", "task_name", "output_dir"])
training_flags.register_float_validators({
    **training_flags.EVAL_POLL_RANGES,
    "learning_rate": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
    "threshold_to_export": training_flags.FloatRange(unset=True)})


def run():
    """FLAGS → GlueRunOptions → albert_tf.glue.runner.run."""
    from albert_tf.glue.runner import GlueRunOptions, run as run_glue

    return cli.run_from_flags(GlueRunOptions, run_glue)


def main(argv: Sequence[str]) -> None:
    cli.run_script("run_classifier", argv, run)


def console_main() -> None:
    """`albert-run-classifier` (console script), `python -m albert_tf.run_classifier`, and in a
    clone the original's `python run_classifier.py` (a shim over this module)."""
    cli.start("run_classifier", run, __name__)


if __name__ == "__main__":
    console_main()
