"""run_classifier's work as a library call: train, evaluate checkpoints, predict, export.

`run(GlueRunOptions(...))` is what `run_classifier.py` calls after parsing its flags (faithfulness
§8.1); tests call it directly. Order of work, as the original: read and check every split
requested (bad input fails here, before any cache file or training), build or reuse the
cached features, train (evaluating each checkpoint as it is saved when --do_eval is also
given), evaluate the checkpoints not evaluated yet (without do_train: follow a trainer's
checkpoints until train_step, as the original's side-car evaluator), predict with the best
one, export it.
"""

from __future__ import annotations

import dataclasses
import functools

import keras
import tensorflow as tf
from absl import logging

from albert_tf.config import AlbertConfig
from albert_tf.export.calibration_data import task_calibration
from albert_tf.finetuning.metrics import mean_of_batch_means
from albert_tf.finetuning.run import (Features, FineTuningError, FineTuningResult, FineTuningRun,
                                      TrainingPlan)
from albert_tf.glue import records
from albert_tf.glue.examples import GlueProcessor, GlueTask, InputExample, get_task
from albert_tf.glue.export import export_classifier
from albert_tf.glue.features import convert_examples_to_features
from albert_tf.glue.metrics import glue_metrics, per_example_loss
from albert_tf.glue.modeling import classifier, glue_objective
from albert_tf.glue.options import GlueRunOptions
from albert_tf.glue.submission import write_prediction_files

# The original ignores keep_checkpoint_max and lets the eval loop prune (Q19, kept).
KEEP_ALL_CHECKPOINTS = 2**31 - 1


class GlueRunError(FineTuningError):
    """Inconsistent options (one line, shown without a traceback by run_classifier)."""


@dataclasses.dataclass
class GlueRunResult(FineTuningResult):
    """What a run did: the shared record plus the files written."""

    prediction_files: list[str] = dataclasses.field(default_factory=list)
    export_dir: str | None = None


class GlueRun(FineTuningRun[GlueRunOptions, GlueRunResult],
              error=GlueRunError, result=GlueRunResult):
    """One invocation's state: task, tokenizer, cached records, trainer, predictor."""

    @functools.cached_property
    def task(self) -> GlueTask:
        """The --task_name's task (its splits, labels, metric)."""
        return get_task(self.opts.task_name)

    @functools.cached_property
    def processor(self) -> GlueProcessor:
        """The task's TSV reader (after `prepare` chose the tokenizer)."""
        return GlueProcessor(self.task, self.tokenizer.uses_sentencepiece,
                             self.opts.do_lower_case)

    def validate(self) -> None:
        opts = self.opts
        for split, wanted in (("train", opts.do_train), ("dev", opts.do_eval)):
            if wanted and split not in self.task.splits:
                hint = ""
                if self.task.name == "ax":
                    hint = ("; predict it with an MNLI model: --do_predict "
                            "--init_checkpoint=<mnli output_dir>/model.ckpt-best")
                raise GlueRunError(f"task {self.task.name} has no {split} split (only "
                                   f"{', '.join(self.task.splits)}){hint}")

    def build_model(self, config: AlbertConfig, encoder: keras.layers.Layer | None
                    ) -> keras.Model:
        return classifier(config, self.task, encoder)

    # ----- inputs -----
    def read_examples(self) -> dict[str, list[InputExample]]:
        """Every requested split (bad input stops the run before anything is written)."""
        opts = self.opts
        wanted = [s for s, on in (("train", opts.do_train), ("dev", opts.do_eval),
                                  ("test", opts.do_predict)) if on]
        splits = {split: self.processor.get_examples(opts.data_dir, split) for split in wanted}
        for split, examples in splits.items():
            logging.info("%s %s: %d examples", self.task.name, split, len(examples))
        return splits

    def build_features(self, examples: dict[str, list[InputExample]]) -> Features:
        """Each split's cached features: in --cached_dir (the user's: refused when stale)
        or output_dir (ours: rebuilt when stale)."""
        opts = self.opts
        cached = {}
        for split, split_examples in examples.items():
            settings = records.cache_settings(self.task.name, split, opts.max_seq_length,
                                              opts.do_lower_case, self.tokenizer,
                                              self.task.path(opts.data_dir, split),
                                              len(split_examples))
            cached[split] = records.cached_records(
                records.cache_path(opts.cached_dir or opts.output_dir, self.task.name, split),
                settings, lambda split_examples=split_examples: convert_examples_to_features(
                    split_examples, self.processor.get_labels(), opts.max_seq_length,
                    self.tokenizer),
                self.task.is_regression, owned=not opts.cached_dir)
        return Features(cached, records.decoder(opts.max_seq_length, self.task.is_regression))

    def training_plan(self) -> TrainingPlan:
        opts = self.opts
        return TrainingPlan(objective=glue_objective(self.task), metric_key=self.task.metric_key,
                            num_train_steps=opts.train_step, num_warmup_steps=opts.warmup_step,
                            optimizer_name=opts.optimizer,
                            keep_checkpoint_max=KEEP_ALL_CHECKPOINTS)

    # ----- evaluation and outputs -----
    def evaluate_current(self, step: int) -> dict[str, float]:
        """Metrics of the model's current weights on the dev set (faithfulness §8.5)."""
        outputs = self.predictor.run(self.dataset("dev", self.opts.eval_batch_size),
                                     len(self.examples["dev"]), f"Evaluating {self.task.name} dev")
        logits, labels = outputs["logits"], outputs["label_ids"]
        weights = outputs["is_real_example"]
        results = glue_metrics(self.task, logits, labels, weights)
        # The Estimator's "loss": the mean over eval batches of each batch's mean loss.
        results["loss"] = mean_of_batch_means(per_example_loss(self.task, logits, labels),
                                              self.opts.eval_batch_size)
        self.report(f"Eval results ({len(labels)} examples)", step, results)
        return results

    def predict(self) -> None:
        """test_results.tsv, submit_results.tsv and the GLUE server file, of the best weights."""
        source = self.load_best_weights()
        logging.info("Predicting %s test with %s", self.task.name, source)
        outputs = self.predictor.run(self.dataset("test", self.opts.predict_batch_size),
                                     len(self.examples["test"]), f"Predicting {self.task.name} test")
        examples = self.examples["test"]
        if len(outputs["logits"]) != len(examples):
            raise RuntimeError(f"{len(outputs['logits'])} predictions for {len(examples)} examples")
        tf.io.gfile.makedirs(self.opts.output_dir)
        self.result.prediction_files = write_prediction_files(
            self.opts.output_dir, self.task, [e.guid for e in examples], outputs["logits"])
        logging.info("Wrote %s", ", ".join(self.result.prediction_files))

    def export(self) -> None:
        """A serving SavedModel of the best weights, albert_model.tflite beside it."""
        source = self.load_best_weights()
        logging.info("Exporting %s", source)
        self.result.export_dir = export_classifier(
            self.trainer.model, self.opts.export_dir, self.opts.max_seq_length,
            self.task.is_regression, self.opts.threshold_to_export,
            self.opts.tflite_quantization, self.config.vocab_size, self.float32_model(),
            openvino_ir=self.opts.openvino_ir, onnx=self.opts.onnx,
            int8_calibration=task_calibration(
                self.opts, records.cache_path(self.opts.cached_dir or self.opts.output_dir,
                                              self.task.name, "train"),
                self.config.vocab_size, self.config.type_vocab_size, self.opts.max_seq_length))


def run(opts: GlueRunOptions, strategy: tf.distribute.Strategy | None = None) -> GlueRunResult:
    """Does what the options ask, in the original's order; returns what happened."""
    return GlueRun(opts, strategy).run()
