"""run_squad's options (run_squad_v1/v2, faithfulness §9.1 names and defaults, plus ours): each
field is its flag (`options.option`); importable without TensorFlow (fast --help)."""

from __future__ import annotations

import dataclasses

from albert_tf.finetuning.options import ExportOptions, FineTuningOptions
from albert_tf.runtime.options import DROPOUT, LEARNING_RATE, PROBABILITY, FloatRange, option, reworded
from albert_tf.squad.postprocess import NULL_THRESHOLD_RULES


@dataclasses.dataclass(kw_only=True)
class SquadRunOptions(ExportOptions):
    """run_squad's flags; the shared fine-tuning and loop flags (output_dir, init_checkpoint,
    do_train, batch sizes, learning_rate, export_dir (v1 only), …) are inherited."""

    train_file: str | None = option(
        None, "SQuAD JSON for training (train-v1.1.json / train-v2.0.json).")
    predict_file: str | None = option(
        None, "SQuAD JSON to predict (and evaluate when it has answers).")
    train_feature_file: str | None = option(
        None, "Training feature TFRecord cache; built when absent, reused when present "
              "(default: output_dir/train.tf_record).")
    predict_feature_file: str | None = option(
        None, "Prediction feature TFRecord cache (default: output_dir/eval.tf_record).")
    predict_feature_left_file: str | None = option(
        None, "Pickled prediction features for post-processing "
              "(default: output_dir/eval_features.pkl).")
    max_seq_length: int = option(384, "Sequence length of each window.", lower_bound=5)
    doc_stride: int = option(128, "Stride between context windows, in pieces.", lower_bound=1)
    max_query_length: int = option(64, "Question pieces kept.", lower_bound=1)
    do_predict: bool = reworded(FineTuningOptions, "do_predict",
                                "Predict (and evaluate) predict_file with every new checkpoint.")
    learning_rate: float = reworded(FineTuningOptions, "learning_rate",
                                    "Peak learning rate (AdamW).", float_range=LEARNING_RATE)
    num_train_epochs: float = option(3.0, "Epochs; steps = int(examples / batch · epochs).",
                                     float_range=FloatRange(low=0.0, low_open=True,
                                                            when="do_train"))
    warmup_proportion: float = option(0.1, "Fraction of the steps for linear warmup.",
                                      float_range=PROBABILITY)
    n_best_size: int = option(20, "n-best answers kept per question.", lower_bound=1)
    max_answer_length: int = option(30, "Longest answer, in pieces.", lower_bound=1)
    use_einsum: bool = option(True, "v1's TFLite switch; accepted, no effect here.")
    export_dir: str | None = reworded(
        ExportOptions, "export_dir",
        "v1: export the best weights here as saved_model/ and albert_model.tflite (int32 "
        "[1, max_seq_length] input_ids, input_mask, segment_ids → start_logits, end_logits); "
        "also serving/, the frozen serving graph for engines (any batch; bfloat16 under "
        "--dtype=bfloat16, else float32), and serving.json: "
        "albert_tf.serving.load_serving(export_dir) runs any of them.")
    version_2_with_negative: bool = option(False, "SQuAD 2.0: unanswerable questions, v2 head.")
    start_n_top: int = option(5, "v2: beam size over start positions.", lower_bound=1)
    end_n_top: int = option(5, "v2: beam size over end positions per start.", lower_bound=1)
    dropout_prob: float = option(0.1, "v2: dropout in the answer-class layer.",
                                 float_range=DROPOUT)
    # Ours.
    null_threshold_rule: str = option(
        "original", "v2: 'original' answers when null score < threshold, as the original (Q24); "
                    "'inclusive' answers when ≤, the rule the threshold search assumes.",
        choices=NULL_THRESHOLD_RULES)
    null_score_diff_threshold: float | None = option(
        None, "v2: use this null-score threshold instead of searching it on predict_file "
              "(needed for files without answers).")
