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
serving.json there: albert_tf.export.load_serving(export_dir) runs them. Bad input stops the run with one line and a
non-zero exit; skipped questions are counted and listed at the end.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from typing import Sequence

from absl import flags

from albert_tf import cli
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

# ----- the original's flags (faithfulness §9.1) -----
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model (default with a Hugging Face "
                    "--init_checkpoint directory: its config.json).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (unused with --spm_model_file).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model of the model (default with a Hugging Face "
                    "--init_checkpoint directory: its spiece.model).")
flags.DEFINE_string("output_dir", None, "Checkpoints, predictions and eval_results.txt.")
flags.DEFINE_string("train_file", None, "SQuAD JSON for training (train-v1.1.json / train-v2.0.json).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and evaluate when it has answers).")
flags.DEFINE_string("train_feature_file", None,
                    "Training feature TFRecord cache; built when absent, reused when present "
                    "(default: output_dir/train.tf_record).")
flags.DEFINE_string("predict_feature_file", None,
                    "Prediction feature TFRecord cache (default: output_dir/eval.tf_record).")
flags.DEFINE_string("predict_feature_left_file", None,
                    "Pickled prediction features for post-processing "
                    "(default: output_dir/eval_features.pkl).")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial weights: an original TF1 checkpoint, a Hugging Face directory or "
                    "one of ours.")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "An exported encoder SavedModel or one of the original's TF1 Hub modules "
                    "(unpacked directory) instead of config + checkpoint.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case question and context (preprocess_text).")
flags.DEFINE_integer("max_seq_length", 384, "Sequence length of each window.", lower_bound=5)
flags.DEFINE_integer("doc_stride", 128, "Stride between context windows, in pieces.", lower_bound=1)
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.", lower_bound=1)
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_predict", False, "Predict (and evaluate) predict_file with every new checkpoint.")
flags.DEFINE_integer("train_batch_size", 32, "Global training batch.", lower_bound=1)
flags.DEFINE_integer("predict_batch_size", 8, "Prediction batch.", lower_bound=1)
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (AdamW).")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs; steps = int(examples / batch · epochs).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps for linear warmup.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint every this many steps.",
                     lower_bound=1)
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per call of the compiled loop.",
                     lower_bound=1)
flags.DEFINE_integer("n_best_size", 20, "n-best answers kept per question.", lower_bound=1)
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in pieces.", lower_bound=1)
flags.DEFINE_bool("use_einsum", True, "v1's TFLite switch; accepted, no effect here.")
flags.DEFINE_string("export_dir", None,
                    "v1: export the best weights here as saved_model/ and albert_model.tflite "
                    "(int32 [1, max_seq_length] input_ids, input_mask, segment_ids → "
                    "start_logits, end_logits); also serving/, the frozen serving graph for "
                    "engines (any batch; bfloat16 under --dtype=bfloat16, else float32), and "
                    "serving.json: albert_tf.export.load_serving(export_dir) runs any of them.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: unanswerable questions, v2 head.")
flags.DEFINE_integer("start_n_top", 5, "v2: beam size over start positions.", lower_bound=1)
flags.DEFINE_integer("end_n_top", 5, "v2: beam size over end positions per start.", lower_bound=1)
flags.DEFINE_float("dropout_prob", 0.1, "v2: dropout in the answer-class layer.")
# ----- ours -----
flags.DEFINE_enum("null_threshold_rule", "original", ["original", "inclusive"],
                  "v2: 'original' answers when null score < threshold, as the original (Q24); "
                  "'inclusive' answers when ≤, the rule the threshold search assumes.")
flags.DEFINE_float("null_score_diff_threshold", None,
                   "v2: use this null-score threshold instead of searching it on predict_file "
                   "(needed for files without answers).")
training_flags.define_training_flags()
training_flags.define_bucketing_flag()
training_flags.define_tflite_flag()
training_flags.define_openvino_flag()
training_flags.define_tpu_flags()
# The loop's flags (--dtype, --jit_compile, --seed, ...) are listed by --help/--helpshort too.
flags.adopt_module_key_flags(training_flags)
flags.mark_flags_as_required(["output_dir"])
training_flags.register_float_validators({
    "learning_rate": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
    "num_train_epochs": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
    "warmup_proportion": training_flags.PROBABILITY,
    "dropout_prob": training_flags.DROPOUT})


def run():
    """FLAGS → SquadRunOptions → albert_tf.squad.runner.run."""
    from albert_tf.squad.runner import SquadRunOptions, run as run_squad

    return cli.run_from_flags(SquadRunOptions, run_squad)


def main(argv: Sequence[str]) -> None:
    cli.run_script("run_squad", argv, run)


def console_main() -> None:
    """`albert-run-squad` (console script), `python -m albert_tf.run_squad`, and in a
    clone the original's `python run_squad.py` (a shim over this module)."""
    cli.start("run_squad", run, __name__)


if __name__ == "__main__":
    console_main()
