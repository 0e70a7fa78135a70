"""SQuAD v1.1 and v2.0 fine-tuning, prediction and evaluation: one script for both versions.

The original's run_squad_v1 / run_squad_v2 flags and defaults (faithfulness §9.1) — v2 with
--version_2_with_negative — plus the training loop's shared flags (--distribution_strategy,
--num_gpus, --dtype, --jit_compile, --gradient_accumulation_steps, --seed, --deterministic,
--log_steps) and ours: --null_threshold_rule, --null_score_diff_threshold,
--tflite_quantization and --openvino_ir (of v1's --export_dir).

    albert-run-squad --version_2_with_negative \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model \
        --init_checkpoint=albert_base/model.ckpt-best --output_dir=out/squad2 \
        --train_file=train-v2.0.json --predict_file=dev-v2.0.json --do_train --do_predict \
        --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2

Writes predictions.json, nbest_predictions.json, null_odds.json (v2) and eval_results.txt
(official-script metrics) in --output_dir; v1's --export_dir writes saved_model/,
albert_model.tflite, the frozen serving graph serving/ (bfloat16 under --dtype=bfloat16) and
serving.json there: albert_tf.serving.load_serving(export_dir) runs them. Bad input stops the run with one line and a
non-zero exit; skipped questions are counted and listed at the end.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.squad.options import SquadRunOptions
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# The original's flags (faithfulness §9.1) and ours, each declared once as a field of
# SquadRunOptions (albert_tf.squad.options), plus the loop's, the run-time set-up's
# and the TPU's.
training_flags.define_script_flags(SquadRunOptions, __name__)


# run(): FLAGS → SquadRunOptions → albert_tf.squad.runner.run; main(argv); console_main():
# `albert-run-squad` (console script), `python -m albert_tf.run_squad` and the clone's
# `python run_squad.py` shim.
_SCRIPT = cli.FineTuningScript("run_squad", SquadRunOptions, "albert_tf.squad.runner", __name__)
run, main, console_main = _SCRIPT.run, _SCRIPT.main, _SCRIPT.console_main


if __name__ == "__main__":
    console_main()
