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

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.race.options import RaceRunOptions
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# The original's flags (faithfulness §10.1), each declared once as a field of RaceRunOptions
# (albert_tf.race.options), plus the loop's, the run-time set-up's
# and the TPU's.
training_flags.define_script_flags(RaceRunOptions, __name__)
flags.register_multi_flags_validator(
    ["high_only", "middle_only"], lambda values: not (values["high_only"] and values["middle_only"]),
    "--high_only and --middle_only exclude each other")


# run(): FLAGS → RaceRunOptions → albert_tf.race.runner.run; main(argv); console_main():
# `albert-run-race` (console script), `python -m albert_tf.run_race` and the clone's
# `python run_race.py` shim.
_SCRIPT = cli.FineTuningScript("run_race", RaceRunOptions, "albert_tf.race.runner", __name__)
run, main, console_main = _SCRIPT.run, _SCRIPT.main, _SCRIPT.console_main


if __name__ == "__main__":
    console_main()
