r"""ALBERT pretraining (MLM + SOP) on TFRecords, on the shared training loop.

The original's run_pretraining flags and defaults (faithfulness §6.1), plus our additions:
--distribution_strategy, --num_gpus, --dtype, --jit_compile, --gradient_accumulation_steps,
--dynamic_masking, --sentence_prediction, --seed, --deterministic, --log_steps,
--clip_norm_mode, --recompute_grad,
--eval_poll_secs, --eval_timeout_secs.

    albert-run-pretraining --albert_config_file=albert_config.json \
        --input_file='data/*.tfrecord' --output_dir=out --do_train --do_eval \
        --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 \
        --optimizer=lamb --learning_rate=0.00176 --num_train_steps=125000 \
        --num_warmup_steps=3125 --save_checkpoints_steps=5000

Training resumes from the latest checkpoint in --output_dir; evaluation writes
output_dir/eval_results.txt (faithfulness §4.4, §6.4). --nodo_train --do_eval is the original's
side-car evaluator: it follows a trainer's checkpoints in output_dir until
--num_train_steps, each evaluated once, the best masked_lm_accuracy kept as
model.ckpt-best (--eval_poll_secs, --eval_timeout_secs). Before anything is built, every input file
is checked against the flags and the config (lengths, record kind, vocabulary, sentence task;
its JSON summary when present); during training each batch's ids are checked on the host. Bad
input is one line `run_pretraining: error: …` and exit status 1. The work is the library call
`albert_tf.pretraining.runner.run`, which in-process users call with the same options
and the same checks.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import flags

from albert_tf import cli
from albert_tf.training import flags as training_flags
from albert_tf.training.choices import OPTIMIZER_NAMES
from albert_tf.pretraining.runner import FLOAT_RANGES, is_hf_directory

FLAGS = flags.FLAGS

# ----- the original's flags (faithfulness §6.1) -----
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model to train (default with a Hugging Face "
                    "--init_checkpoint directory: its config.json).")
flags.DEFINE_string("input_file", None,
                    "Comma-separated globs of TFRecord files (used for training and evaluation).")
flags.DEFINE_string("output_dir", None, "Checkpoints, TensorBoard summaries and eval_results.txt.")
flags.DEFINE_string("init_checkpoint", None,
                    "Warm start: an original TF1 checkpoint, a Hugging Face directory or one of "
                    "ours (model weights only).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length S; must match the data.", lower_bound=1)
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Masked positions per sequence; must match the data.", lower_bound=0)
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", False,
                  "Evaluate and write eval_results.txt: after training with --do_train; "
                  "without it, follow a trainer's checkpoints in --output_dir until "
                  "--num_train_steps, each once, the best as model.ckpt-best.")
flags.DEFINE_integer("train_batch_size", 4096, "Global batch per optimizer step.", lower_bound=1)
flags.DEFINE_integer("eval_batch_size", 64, "Global eval batch.", lower_bound=1)
flags.DEFINE_enum("optimizer", "lamb", list(OPTIMIZER_NAMES), "lamb or adamw.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Optimizer steps.", lower_bound=1)
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.", lower_bound=0)
flags.DEFINE_integer("start_warmup_step", 0, "Step at which warmup starts.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Checkpoint every this many steps.", lower_bound=1)
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.", lower_bound=1)
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per call of the compiled loop.", lower_bound=1)
flags.DEFINE_integer("max_eval_steps", 100, "Eval batches per evaluation.", lower_bound=1)
flags.DEFINE_bool("init_from_group0", False,
                  "Groups missing from --init_checkpoint start from group 0's weights.")
flags.DEFINE_integer("masked_lm_budget", 0,
                     "Original 'online masking' switch, never functional there (Q12): any value "
                     "> 0 is rejected; use --dynamic_masking.", lower_bound=0)
# ----- ours -----
flags.DEFINE_bool("dynamic_masking", False,
                  "Read unmasked records and draw n-gram masks in the input pipeline each epoch.")
flags.DEFINE_enum("sentence_prediction", None, ["sop", "nsp", "none"],
                  "Sentence task (the paper's Table 5). Default: the records' labels (SOP or NSP, "
                  "as create_pretraining_data made them); sop/nsp also check the records' .json "
                  "summary agrees; none: masked LM only, no sentence loss or metrics.")
training_flags.define_training_flags()
training_flags.define_eval_poll_flags()
training_flags.define_tpu_flags()
# The loop's flags (--dtype, --jit_compile, --seed, ...) are listed by --help/--helpshort too.
flags.adopt_module_key_flags(training_flags)
flags.mark_flags_as_required(["output_dir", "input_file"])


flags.register_multi_flags_validator(
    ["albert_config_file", "init_checkpoint"],
    lambda f: bool(f["albert_config_file"]) or is_hf_directory(f["init_checkpoint"]),
    "--albert_config_file is required unless --init_checkpoint is a Hugging Face directory")
flags.register_validator("masked_lm_budget", lambda v: v == 0,
                         "--masked_lm_budget is not supported (faithfulness Q12); use --dynamic_masking")
flags.register_multi_flags_validator(["do_train", "do_eval"], lambda f: f["do_train"] or f["do_eval"],
                                     "at least one of --do_train and --do_eval must be true")
training_flags.register_float_validators(FLOAT_RANGES)


def run(callbacks: Sequence = ()) -> dict:
    """FLAGS → PretrainingRunOptions → albert_tf.pretraining.runner.run; the strategy
    is set up only after the config, option and record checks passed."""
    from albert_tf.pretraining.runner import PretrainingRunOptions, run as run_pretraining

    options = cli.options_from_flags(PretrainingRunOptions, FLAGS)
    return run_pretraining(options, lambda: training_flags.setup_from_flags(FLAGS), callbacks)


def main(argv: Sequence[str], callbacks: Sequence = ()) -> None:
    # Bad input (config, checkpoint, records) or a diverged run: one line and exit status 1,
    # not a traceback (--verbosity=1 logs it).
    cli.run_script("run_pretraining", argv, lambda: run(callbacks))


def console_main() -> None:
    """`albert-run-pretraining` (console script), `python -m albert_tf.run_pretraining`, and in a
    clone the original's `python run_pretraining.py` (a shim over this module)."""
    cli.start("run_pretraining", run, __name__)


if __name__ == "__main__":
    console_main()
