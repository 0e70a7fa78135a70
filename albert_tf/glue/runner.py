"""run_classifier's work as a library call: train, evaluate checkpoints, predict, export.

`run(GlueRunOptions(...))` is what `run_classifier.py` calls after parsing its flags (spec
§8.1); tests call it directly. Order of work, as the original: read and check every split
requested (bad input fails here, before any cache file or training), build or reuse the
cached features, train (evaluating each checkpoint as it is saved when --do_eval is also
given), evaluate the checkpoints not evaluated yet, predict with the best one, export it.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.config import AlbertConfig
from albert_tf.glue import records
from albert_tf.glue.checkpoint_eval import (BEST_PREFIX, CheckpointEvaluator,
                                            numbered_checkpoints)
from albert_tf.glue.export import export_classifier
from albert_tf.glue.features import convert_examples_to_features
from albert_tf.glue.inference import Predictor
from albert_tf.glue.metrics import glue_metrics, per_example_loss
from albert_tf.glue.modeling import (RestoreReport, classifier_model_fn, glue_objective,
                                     restore_initial_weights)
from albert_tf.glue.submission import write_prediction_files
from albert_tf.glue.tasks import GlueProcessor, GlueTask, InputExample, get_task
from albert_tf.tokenization import FullTokenizer
from albert_tf.training import Callback, LoopConfig, Trainer, create_optimizer
from albert_tf.training.choices import OPTIMIZER_NAMES
from albert_tf.training.summaries import write_scalars

# The original ignores keep_checkpoint_max and lets the eval loop prune (Q19, kept).
KEEP_ALL_CHECKPOINTS = 2**31 - 1


class GlueRunError(ValueError):
    """Inconsistent options (one line, shown without a traceback by run_classifier)."""


@dataclasses.dataclass
class GlueRunOptions:
    """run_classifier's flags (spec §8.1 names and defaults) plus the loop's shared ones."""

    data_dir: str
    task_name: str
    output_dir: str
    albert_config_file: str | None = None
    vocab_file: str | None = None
    spm_model_file: str | None = None
    cached_dir: str | None = None
    init_checkpoint: str | None = None
    albert_hub_module_handle: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    train_step: int = 1000
    warmup_step: int = 0
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5  # accepted, unused (Q19)
    iterations_per_loop: int = 1000
    optimizer: str = "adamw"
    export_dir: str | None = None
    threshold_to_export: float = float("nan")
    # The training loop's shared flags.
    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int | None = None


@dataclasses.dataclass
class GlueRunResult:
    """What a run did: last training logs, every eval, the best, files written."""

    train_logs: dict[str, float] = dataclasses.field(default_factory=dict)
    eval_results: list[dict[str, float]] = dataclasses.field(default_factory=list)
    best_step: int | None = None
    best_results: dict[str, float] | None = None
    prediction_files: list[str] = dataclasses.field(default_factory=list)
    export_dir: str | None = None
    restore_report: RestoreReport | None = None


def _validate(opts: GlueRunOptions, task: GlueTask) -> None:
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
        raise GlueRunError("at least one of do_train, do_eval, do_predict or export_dir is "
                           "required")
    if not opts.albert_config_file and not opts.albert_hub_module_handle:
        raise GlueRunError("albert_config_file is required unless albert_hub_module_handle is set")
    if not opts.spm_model_file and not opts.vocab_file and not opts.albert_hub_module_handle:
        raise GlueRunError("spm_model_file (SentencePiece) or vocab_file (WordPiece) is required")
    if opts.optimizer not in OPTIMIZER_NAMES:
        raise GlueRunError(f"optimizer must be one of {', '.join(OPTIMIZER_NAMES)}, "
                           f"got {opts.optimizer!r}")
    if opts.do_train and opts.train_step < 1:
        raise GlueRunError(f"train_step must be >= 1 with do_train, got {opts.train_step}")
    if opts.max_seq_length < 3:
        raise GlueRunError(f"max_seq_length must be >= 3, got {opts.max_seq_length}")
    for split, wanted in (("train", opts.do_train), ("dev", opts.do_eval)):
        if wanted and split not in task.splits:
            hint = ""
            if task.name == "ax":
                hint = ("; predict it with an MNLI model: --do_predict "
                        "--init_checkpoint=<mnli output_dir>/model.ckpt-best")
            raise GlueRunError(f"task {task.name} has no {split} split (only "
                               f"{', '.join(task.splits)}){hint}")


class _EvaluateOnSave(Callback):
    """Evaluates each checkpoint as the loop writes it (its weights are the live ones)."""

    def __init__(self, evaluator: CheckpointEvaluator, results: list):
        self.evaluator = evaluator
        self.results = results

    def on_checkpoint(self, step: int, path: str | None) -> None:
        if path and step > self.evaluator.last_step:
            self.results.append(self.evaluator.evaluate(step, path, restore=False))


class GlueRun:
    """One invocation's state: task, tokenizer, cached records, trainer, predictor."""

    def __init__(self, opts: GlueRunOptions, strategy: tf.distribute.Strategy | None = None):
        self.opts = opts
        self.task = get_task(opts.task_name)
        _validate(opts, self.task)
        spm_model_file = opts.spm_model_file
        if opts.albert_hub_module_handle:  # the export's config and SentencePiece model (Q21)
            from albert_tf.export.loading import (  # pylint: disable=import-outside-toplevel
                export_spm_model, load_export_config)

            self.config = load_export_config(opts.albert_hub_module_handle)
            spm_model_file = export_spm_model(opts.albert_hub_module_handle, spm_model_file)
        else:
            self.config = AlbertConfig.from_json_file(opts.albert_config_file)
        if opts.max_seq_length > self.config.max_position_embeddings:
            raise GlueRunError(f"max_seq_length {opts.max_seq_length} exceeds the model's "
                               f"max_position_embeddings {self.config.max_position_embeddings}")
        self.tokenizer = FullTokenizer(opts.vocab_file, opts.do_lower_case, spm_model_file)
        self.processor = GlueProcessor(self.task, self.tokenizer.uses_sentencepiece,
                                       opts.do_lower_case)
        self.result = GlueRunResult()
        self._initial_weights_loaded = False
        # Read every requested split first: bad input stops the run before anything is written.
        wanted = [s for s, on in (("train", opts.do_train), ("dev", opts.do_eval),
                                  ("test", opts.do_predict)) if on]
        self.examples: dict[str, list[InputExample]] = {
            split: self.processor.get_examples(opts.data_dir, split) for split in wanted}
        for split, examples in self.examples.items():
            logging.info("%s %s: %d examples", self.task.name, split, len(examples))
        self.records = {split: self._records(split) for split in wanted}
        self.strategy = strategy or tf.distribute.get_strategy()
        self.trainer = self._trainer()
        self.predictor = Predictor(self.trainer.model, self.trainer.strategy)
        self.evaluator = CheckpointEvaluator(opts.output_dir, self.task.metric_key,
                                             self._evaluate_current, self._restore)

    # ----- inputs -----
    def _records(self, split: str) -> str:
        opts = self.opts
        path = records.cache_path(opts.cached_dir or opts.output_dir, self.task.name, split,
                                  opts.max_seq_length, self.tokenizer,
                                  self.task.path(opts.data_dir, split),
                                  self.tokenizer.uses_sentencepiece, opts.do_lower_case)
        return records.cached_records(
            path, lambda: convert_examples_to_features(
                self.examples[split], self.processor.get_labels(), opts.max_seq_length,
                self.tokenizer), self.task.is_regression)

    def _dataset(self, split: str, batch_size: int) -> tf.data.Dataset:
        return records.eval_dataset(self.records[split], batch_size, self.opts.max_seq_length,
                                    self.task.is_regression)

    # ----- model -----
    def _trainer(self) -> Trainer:
        opts = self.opts
        loop_config = LoopConfig(
            output_dir=opts.output_dir, num_train_steps=opts.train_step if opts.do_train else 0,
            train_batch_size=opts.train_batch_size,
            iterations_per_loop=min(opts.iterations_per_loop, opts.save_checkpoints_steps),
            save_checkpoints_steps=opts.save_checkpoints_steps,
            keep_checkpoint_max=KEEP_ALL_CHECKPOINTS, log_steps=opts.log_steps,
            gradient_accumulation_steps=opts.gradient_accumulation_steps,
            jit_compile=opts.jit_compile, dtype=opts.dtype)
        optimizer_fn = None
        if opts.do_train:
            def optimizer_fn():
                return create_optimizer(opts.optimizer, opts.learning_rate, opts.train_step,
                                        opts.warmup_step)
        init_fn = self._warm_start if opts.init_checkpoint else None
        model_fn = classifier_model_fn(None if opts.albert_hub_module_handle else self.config,
                                       self.task.num_labels, opts.albert_hub_module_handle)
        return Trainer(model_fn, glue_objective(self.task), loop_config, optimizer_fn,
                       self.strategy, init_fn=init_fn)

    def _warm_start(self, model) -> None:
        self.result.restore_report = restore_initial_weights(model, self.opts.init_checkpoint)

    def _restore(self, path: str) -> None:
        self.trainer.restore_model(path)

    # ----- evaluation -----
    def _evaluate_current(self, step: int) -> dict[str, float]:
        """Metrics of the model's current weights on the dev set (spec §8.5)."""
        outputs = self.predictor.run(self._dataset("dev", self.opts.eval_batch_size))
        logits, labels = outputs["logits"], outputs["label_ids"]
        weights = outputs["is_real_example"]
        results = glue_metrics(self.task, logits, labels, weights)
        # The Estimator's "loss": the mean over eval batches of each batch's mean loss.
        losses = per_example_loss(self.task, logits, labels)
        size = self.opts.eval_batch_size
        results["loss"] = float(np.mean([chunk.mean() for chunk in
                                         np.split(losses, range(size, len(losses), size))]))
        logging.info("***** Eval results at step %d (%d examples) *****", step, len(labels))
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if self.trainer.is_chief:
            writer = tf.summary.create_file_writer(os.path.join(self.opts.output_dir, "eval"))
            write_scalars(writer, step, {k: v for k, v in results.items()
                                         if not math.isnan(v)})
        return results

    # ----- the three phases -----
    def train(self) -> None:
        opts = self.opts
        if not opts.init_checkpoint and not opts.albert_hub_module_handle:
            logging.warning("No --init_checkpoint: the encoder starts from random "
                            "initialisation (expected only for tests)")
        if opts.do_eval:
            self.trainer.callbacks.append(_EvaluateOnSave(self.evaluator, self.result.eval_results))
        self.result.train_logs = self.trainer.train(
            records.train_dataset_fn(self.records["train"], opts.train_batch_size,
                                     opts.max_seq_length, self.task.is_regression, opts.seed))

    def evaluate(self) -> None:
        pending = self.evaluator.pending()
        if pending:
            self.result.eval_results += self.evaluator.evaluate_pending()
        elif self.evaluator.best_step is None:
            if not (self.opts.init_checkpoint or self.opts.albert_hub_module_handle):
                raise GlueRunError(f"nothing to evaluate: no model.ckpt-<step> in "
                                   f"{self.opts.output_dir} and no --init_checkpoint")
            self._load_initial_weights()
            self.result.eval_results.append(self.evaluator.evaluate(0, None, restore=False))
        else:
            logging.info("Every checkpoint in %s was already evaluated", self.opts.output_dir)
        self.result.best_step = self.evaluator.best_step
        self.result.best_results = self.evaluator.best_results
        if self.evaluator.best_step is not None:
            logging.info("Best %s = %s at step %d (%s)", self.task.metric_key,
                         self.evaluator.best_value, self.evaluator.best_step,
                         self.evaluator.best_path)

    def _load_initial_weights(self) -> None:
        """--init_checkpoint (or the export's weights) into the model, once per run."""
        if self._initial_weights_loaded:
            return
        if self.opts.init_checkpoint:
            self._warm_start(self.trainer.model)
        else:
            logging.info("Using the weights of %s", self.opts.albert_hub_module_handle)
        self._initial_weights_loaded = True

    def load_best_weights(self) -> str:
        """Loads model.ckpt-best, else the newest checkpoint, else the initial weights."""
        best = os.path.join(self.opts.output_dir, BEST_PREFIX)
        if tf.io.gfile.exists(best + ".index"):
            self.trainer.restore_model(best)
            return best
        existing = numbered_checkpoints(self.opts.output_dir)
        if existing:
            logging.warning("No %s (run --do_eval to select it); using the newest checkpoint %s",
                            best, existing[-1][1])
            self.trainer.restore_model(existing[-1][1])
            return existing[-1][1]
        if self.opts.init_checkpoint or self.opts.albert_hub_module_handle:
            logging.info("No checkpoint in %s; using the initial weights", self.opts.output_dir)
            self._load_initial_weights()
            return self.opts.init_checkpoint or self.opts.albert_hub_module_handle
        raise GlueRunError(f"no weights to use: no checkpoint in {self.opts.output_dir} and "
                           "no --init_checkpoint")

    def predict(self) -> None:
        source = self.load_best_weights()
        logging.info("Predicting %s test with %s", self.task.name, source)
        outputs = self.predictor.run(self._dataset("test", self.opts.predict_batch_size))
        examples = self.examples["test"]
        if len(outputs["logits"]) != len(examples):
            raise RuntimeError(f"{len(outputs['logits'])} predictions for {len(examples)} examples")
        tf.io.gfile.makedirs(self.opts.output_dir)
        self.result.prediction_files = write_prediction_files(
            self.opts.output_dir, self.task, [e.guid for e in examples], outputs["logits"])
        logging.info("Wrote %s", ", ".join(self.result.prediction_files))

    def export(self) -> None:
        source = self.load_best_weights()
        logging.info("Exporting %s", source)
        self.result.export_dir = export_classifier(
            self.trainer.model, self.opts.export_dir, self.opts.max_seq_length,
            self.task.is_regression, self.opts.threshold_to_export)


def run(opts: GlueRunOptions, strategy: tf.distribute.Strategy | None = None) -> GlueRunResult:
    """Does what the options ask, in the original's order; returns what happened."""
    glue = GlueRun(opts, strategy)
    if opts.do_train:
        glue.train()
    if opts.do_eval:
        glue.evaluate()
    if opts.do_predict:
        glue.predict()
    if opts.export_dir:
        glue.export()
    return glue.result
