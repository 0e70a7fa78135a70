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

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.glue.options import GlueRunOptions
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# The original's flags (faithfulness §8.1) and ours, each declared once as a field of
# GlueRunOptions (albert_tf.glue.options), plus the loop's, the run-time set-up's
# and the TPU's.
training_flags.define_script_flags(GlueRunOptions, __name__)


# run(): FLAGS → GlueRunOptions → albert_tf.glue.runner.run; main(argv); console_main():
# `albert-run-classifier` (console script), `python -m albert_tf.run_classifier` and the clone's
# `python run_classifier.py` shim.
_SCRIPT = cli.FineTuningScript("run_classifier", GlueRunOptions, "albert_tf.glue.runner", __name__)
run, main, console_main = _SCRIPT.run, _SCRIPT.main, _SCRIPT.console_main


if __name__ == "__main__":
    console_main()
