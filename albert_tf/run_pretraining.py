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

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import flags

from albert_tf import cli
from albert_tf.pretraining.runner import (MASKED_LM_BUDGET_UNSUPPORTED, PretrainingRunOptions,
                                          is_hf_directory)
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# The original's flags (faithfulness §6.1) and ours, each declared once as a field of
# PretrainingRunOptions (albert_tf.pretraining.runner), plus the loop's, the run-time set-up's
# and the TPU's.
training_flags.define_script_flags(PretrainingRunOptions, __name__)
flags.register_multi_flags_validator(
    ["albert_config_file", "init_checkpoint"],
    lambda f: bool(f["albert_config_file"]) or is_hf_directory(f["init_checkpoint"]),
    "--albert_config_file is required unless --init_checkpoint is a Hugging Face directory")
flags.register_validator("masked_lm_budget", lambda v: v == 0, MASKED_LM_BUDGET_UNSUPPORTED)
flags.register_multi_flags_validator(["do_train", "do_eval"], lambda f: f["do_train"] or f["do_eval"],
                                     "at least one of --do_train and --do_eval must be true")


def run(callbacks: Sequence = ()) -> dict:
    """FLAGS → PretrainingRunOptions → albert_tf.pretraining.runner.run; the strategy
    is set up only after the config, option and record checks passed."""
    from albert_tf.pretraining.runner import run as run_pretraining

    return run_pretraining(cli.options_from_flags(PretrainingRunOptions, FLAGS),
                           lambda: training_flags.setup_from_flags(FLAGS), callbacks)


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
