"""run_squad's work as a library call, on the shared fine-tuning path (`albert_tf.finetuning`).

`run(SquadRunOptions(...))` is what `run_squad.py` calls after parsing its flags
(faithfulness §9.1); tests call it directly. SQuAD is one more `FineTuningRun`: read and
check the input files (bad input fails before anything is written), build or reuse the
feature caches, then the shared phases — build the span labeler, warm start, train, and
with --do_predict evaluate every checkpoint not evaluated yet (predict under the strategy →
n-best post-processing → the official script's scores), keeping the best by F1 as
`model.ckpt-best` (the original's predict loop, §9.8). The prediction files left in
output_dir are the best checkpoint's.

What stays SQuAD's own: steps from examples × `num_train_epochs` and warmup from
`warmup_proportion` (AdamW only, as the original), the v2 null-threshold search (two passes),
and the skipped-question report, and v1's `--export_dir` (a SavedModel and
`albert_model.tflite` of the best weights, §9.8; albert_tf/squad/export.py). Q23 fixed:
prediction alone reads neither `train_file` nor a step count.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf.runtime import paths
from albert_tf.config import AlbertConfig
from albert_tf.export.calibration_data import task_calibration
from albert_tf.finetuning.bucketing import LengthBuckets
from albert_tf.finetuning.run import (DatasetFn, Features, FineTuningError, FineTuningResult,
                                      FineTuningRun, TrainingPlan)
from albert_tf.squad import records
from albert_tf.squad.examples import (SkipReport, SquadExample, read_squad_examples,
                                      read_squad_file, shuffle_training_examples)
from albert_tf.squad.export import export_squad_v1
from albert_tf.squad.features import FeatureBuilder, SquadFeature
from albert_tf.squad.metrics import evaluate_v1, evaluate_v2
from albert_tf.squad.modeling import span_labeler, squad_objective
from albert_tf.squad.options import SquadRunOptions
from albert_tf.squad.postprocess import (V1_OUTPUTS, V2_OUTPUTS, SquadPredictions, postprocess,
                                         results_by_unique_id, write_prediction_files)

NA_PROB_THRESH = 1.0  # the official default, applied to logits by the original (Q25, kept)
METRIC_KEY = "f1"


class SquadRunError(FineTuningError):
    """Inconsistent options (one line, shown without a traceback by run_squad)."""


@dataclasses.dataclass
class SquadExamples:
    """What `read_examples` reads: the training and prediction questions, and predict_file's
    articles (the official evaluation scores against them)."""

    train: list[SquadExample] = dataclasses.field(default_factory=list)
    predict: list[SquadExample] = dataclasses.field(default_factory=list)
    predict_data: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @functools.cached_property
    def has_gold(self) -> bool:
        """Whether predict_file has answers to evaluate against (read once)."""
        return any(qa.get("answers") for article in self.predict_data
                   for paragraph in article["paragraphs"] for qa in paragraph["qas"])


@dataclasses.dataclass
class SquadFeatures(Features):
    """The cached records plus the prediction windows post-processing maps answers from (no
    template decoder: SQuAD's datasets are `squad.records`')."""

    predict: list[SquadFeature] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class SquadRunResult(FineTuningResult):
    """What a run did: the shared record plus skips and files."""

    prediction_files: dict[str, str] = dataclasses.field(default_factory=dict)
    skips: SkipReport = dataclasses.field(default_factory=SkipReport)
    export_dir: str | None = None


class SquadRun(FineTuningRun[SquadRunOptions, SquadRunResult],
               error=SquadRunError, result=SquadRunResult):
    """One invocation's state: examples, cached features, trainer, evaluator, predictor."""

    def validate(self) -> None:
        opts = self.opts
        if opts.export_dir:
            self._validate_export()
        if opts.do_train and not opts.train_file:
            raise SquadRunError("do_train needs train_file")
        if opts.do_predict and not opts.predict_file:
            raise SquadRunError("do_predict needs predict_file")
        if opts.max_seq_length <= opts.max_query_length + 3:
            raise SquadRunError(f"max_seq_length ({opts.max_seq_length}) must exceed "
                                f"max_query_length + 3 ({opts.max_query_length + 3})")
        if (opts.version_2_with_negative
                and max(opts.start_n_top, opts.end_n_top) > opts.max_seq_length):
            raise SquadRunError("start_n_top and end_n_top must not exceed max_seq_length")

    def _validate_export(self) -> None:
        opts = self.opts
        if opts.version_2_with_negative:
            raise SquadRunError("export_dir is SQuAD v1 only (the original's run_squad_v2 has "
                                "none)")
        export = paths.absolute(opts.export_dir)
        output = paths.absolute(opts.output_dir)
        if output == export or output.startswith(export + os.sep):
            raise SquadRunError(f"export_dir {opts.export_dir} would replace output_dir "
                                f"{opts.output_dir}: give a directory of its own")

    def build_model(self, config: AlbertConfig, encoder: keras.layers.Layer | None
                    ) -> keras.Model:
        opts = self.opts
        return span_labeler(config, opts.version_2_with_negative, opts.start_n_top,
                            opts.end_n_top, opts.dropout_prob, encoder)

    # ----- inputs -----
    def read_examples(self) -> SquadExamples:
        """train_file and predict_file (bad input stops the run before anything is written)."""
        opts = self.opts
        v2 = opts.version_2_with_negative
        examples = SquadExamples()
        if opts.do_train:
            examples.train, _ = read_squad_examples(opts.train_file, True, v2, self.result.skips)
        if opts.do_predict:
            examples.predict, _ = read_squad_examples(opts.predict_file, False, v2,
                                                      self.result.skips)
            examples.predict_data = read_squad_file(opts.predict_file)["data"]
        return examples

    @functools.cached_property
    def builder(self) -> FeatureBuilder:
        """Windows of examples (after `prepare` chose the tokenizer)."""
        opts = self.opts
        return FeatureBuilder(self.tokenizer, opts.max_seq_length, opts.doc_stride,
                              opts.max_query_length, opts.do_lower_case)

    def build_features(self, examples: SquadExamples) -> SquadFeatures:
        """The training records and the prediction records + feature objects, cached."""
        features = SquadFeatures({})
        if self.opts.do_train:
            features.records["train"] = self._train_records(examples.train)
        if self.opts.do_predict:
            features.records["predict"], features.predict = self._predict_records(
                examples.predict)
        return features

    def choose_buckets(self) -> LengthBuckets | None:
        """v2: length buckets of at least max(start_n_top, end_n_top) positions (the beam's
        top-k). v1 keeps max_seq_length: its padding logits are unmasked (Q22), so they enter
        the loss's softmax and can take n-best slots — cutting them would change results."""
        opts = self.opts
        if opts.version_2_with_negative:
            return self.length_buckets(opts.max_seq_length,
                                       min_length=max(opts.start_n_top, opts.end_n_top))
        if opts.bucket_by_length:
            logging.warning("--bucket_by_length has no effect on SQuAD v1: its unmasked padding "
                            "logits are part of the loss and of the n-best search (Q22)")
        return None

    def training_plan(self) -> TrainingPlan:
        opts = self.opts
        v2 = opts.version_2_with_negative
        steps = self._num_train_steps()
        return TrainingPlan(objective=squad_objective(v2), metric_key=METRIC_KEY,
                            num_train_steps=steps,
                            num_warmup_steps=int(steps * opts.warmup_proportion),
                            optimizer_name="adamw",  # the original always uses AdamW here
                            predict_outputs=V2_OUTPUTS if v2 else V1_OUTPUTS,
                            model_inputs=records.inference_inputs if v2 else None)

    def train_dataset_fn(self) -> DatasetFn:
        opts = self.opts
        return records.train_dataset_fn(self.records["train"], opts.train_batch_size,
                                        opts.max_seq_length, opts.version_2_with_negative,
                                        opts.seed, self.buckets)

    def _num_train_steps(self) -> int:
        """As the original: from the number of examples, not of windows (§9.1)."""
        opts = self.opts
        if not opts.do_train:
            return 0
        steps = int(len(self.examples.train) / opts.train_batch_size * opts.num_train_epochs)
        if steps < 1:
            raise SquadRunError(
                f"{opts.train_file}: {len(self.examples.train)} examples give 0 training "
                f"steps at train_batch_size {opts.train_batch_size} × num_train_epochs "
                f"{opts.num_train_epochs}")
        return steps

    def _settings(self, role: str, source: str) -> dict[str, Any]:
        opts = self.opts
        return records.cache_settings(
            role, source, self.tokenizer, opts.max_seq_length, opts.doc_stride,
            opts.max_query_length, opts.do_lower_case, opts.version_2_with_negative)

    def _train_records(self, train_examples: list[SquadExample]) -> str:
        opts = self.opts

        def build() -> list[SquadFeature]:
            examples = shuffle_training_examples(train_examples)
            features = self.builder.build(examples, with_labels=True, skips=self.result.skips)
            if not features:
                raise SquadRunError(f"{opts.train_file}: no usable training question")
            return features

        path = opts.train_feature_file or os.path.join(opts.output_dir, "train.tf_record")
        return records.cached_train_records(path, self._settings("train", opts.train_file),
                                            build, owned=not opts.train_feature_file)

    def _predict_records(self, predict_examples: list[SquadExample]
                         ) -> tuple[str, list[SquadFeature]]:
        opts = self.opts

        def build() -> list[SquadFeature]:
            features = self.builder.build(predict_examples, with_labels=False,
                                          skips=self.result.skips)
            if not features:
                raise SquadRunError(f"{opts.predict_file}: no usable question to predict")
            return features

        record_path = opts.predict_feature_file or os.path.join(opts.output_dir, "eval.tf_record")
        left_path = opts.predict_feature_left_file or os.path.join(opts.output_dir,
                                                                   "eval_features.pkl")
        features = records.cached_predict_features(
            record_path, left_path, self._settings("predict", opts.predict_file), build,
            owned=not (opts.predict_feature_file or opts.predict_feature_left_file),
            qas_ids=[e.qas_id for e in predict_examples])
        return record_path, features

    # ----- prediction and evaluation -----
    def predictions(self) -> SquadPredictions:
        """n-best lists (and null scores) of the model's current weights."""
        opts = self.opts
        dataset = records.predict_dataset(self.records["predict"], opts.predict_batch_size,
                                          opts.max_seq_length, opts.version_2_with_negative,
                                          self.buckets)
        outputs = self.predictor.run(dataset, len(self.features.predict),
                                     "Predicting SQuAD features")
        raw = results_by_unique_id(outputs, self.predictor.outputs)
        return postprocess(self.examples.predict, self.features.predict, raw,
                           opts.version_2_with_negative, opts.n_best_size, opts.max_answer_length)

    def evaluate_current(self, step: int) -> dict[str, Any]:
        """Predicts, writes the three files and scores them (§9.7–9.8)."""
        opts = self.opts
        squad = self.predictions()
        if not opts.version_2_with_negative:
            final = squad.best_texts()
            self.result.prediction_files = write_prediction_files(opts.output_dir, final, squad)
            results = evaluate_v1(self.examples.predict_data, final) if self.examples.has_gold else {}
        else:
            results = self._evaluate_v2(squad)
        self.report(f"Eval results ({len(self.examples.predict)} questions)", step, results)
        return results

    def _evaluate_v2(self, squad: SquadPredictions) -> dict[str, Any]:
        """Two passes as the original: search the threshold on un-thresholded predictions,
        then write and score the thresholded ones (§9.8)."""
        opts = self.opts
        threshold = opts.null_score_diff_threshold
        if threshold is None and self.examples.has_gold:
            first = evaluate_v2(self.examples.predict_data, squad.best_texts(), squad.null_odds,
                                NA_PROB_THRESH)
            threshold = first["best_f1_thresh"]
            logging.info("Before the threshold: exact %.4f, f1 %.4f; best_f1_thresh = %s",
                         first["exact"], first["f1"], threshold)
        if threshold is None:
            logging.warning("%s has no gold answers and --null_score_diff_threshold is unset: "
                            "every question gets its best non-null answer", opts.predict_file)
        final = squad.predictions(threshold, opts.null_threshold_rule)
        self.result.prediction_files = write_prediction_files(opts.output_dir, final, squad)
        if not self.examples.has_gold:
            return {}
        results = evaluate_v2(self.examples.predict_data, final, squad.null_odds, NA_PROB_THRESH)
        results["null_score_diff_threshold"] = threshold
        return results

    def predict(self) -> None:
        """Evaluates pending checkpoints (or the initial weights), leaving the best's files."""
        pending = self.evaluator.pending()
        if not self.examples.has_gold and pending:
            step, prefix = pending[-1]  # no gold answers: nothing to select by; the newest
            self.trainer.restore_model(prefix)
            self.eval_results.append(self.evaluate_current(step))
            return
        evaluated = len(self.eval_results)
        self.evaluate()
        best = self.evaluator.best_step
        newest = self.eval_results[-1].get("global_step") if len(self.eval_results) > evaluated else None
        if best is not None and newest != best:
            # The files in output_dir are the last evaluation's: write the best's again.
            logging.info("Best %s %s at step %d: writing its predictions", METRIC_KEY,
                         self.evaluator.best_value, best)
            self.load_best_weights()
            self.eval_results.append(self.evaluator.evaluate(best, None, restore=False))
        self.result.best_step = best
        self.result.best_results = self.evaluator.best_results
        if best is not None:
            logging.info("best perf happened at step: %d (f1 = %s)", best,
                         self.evaluator.best_value)

    def export(self) -> None:
        """v1: the best weights as a SavedModel and albert_model.tflite (§9.8)."""
        source = self.load_best_weights()
        logging.info("Exporting %s", source)
        opts = self.opts
        self.result.export_dir = export_squad_v1(self.float32_model(), opts.export_dir,
                                                 opts.max_seq_length, self.config.vocab_size,
                                                 opts.tflite_quantization, opts.openvino_ir,
                                                 trained_model=self.trainer.model,
                                                 onnx=opts.onnx,
                                                 int8_calibration=task_calibration(
                                                     opts, opts.train_feature_file or os.path.join(
                                                         opts.output_dir, "train.tf_record"),
                                                     self.config.vocab_size,
                                                     self.config.type_vocab_size,
                                                     opts.max_seq_length))

    def finish(self) -> None:
        """Lists the questions skipped on the way (bad answers, empty contexts, failed
        alignment) at the end of the log; they are also in `result.skips`."""
        for line in self.result.skips.summary_lines():
            logging.warning("%s", line)



def run(opts: SquadRunOptions, strategy: tf.distribute.Strategy | None = None) -> SquadRunResult:
    """Does what the options ask (train, predict + evaluate, export); returns what happened.

    Questions skipped on the way (bad answers, empty contexts, failed alignment) are
    listed at the end of the log and returned in `result.skips`.
    """
    return SquadRun(opts, strategy).run()
