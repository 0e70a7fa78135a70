"""run_race's work as a library call: read, build or reuse features, train, evaluate, predict.

`run(RaceRunOptions(...))` is what `run_race.py` calls after parsing its flags (faithfulness §10.1);
tests call it directly. Order of work, as the original: read and check every split the run
needs (bad input fails here, before anything is written), build or reuse the feature caches,
train (evaluating each checkpoint as it is saved when --do_eval is also given), evaluate the
checkpoints not evaluated yet keeping the best by `eval_accuracy` (with --nodo_train: follow
a trainer's checkpoints until train_step, as the original's side-car evaluator), then predict.

Q28 fixed: predicting needs no labels (test articles may lack `answers`), writes
`predictions.tsv` (id, question index, letter) with the best checkpoint, and — when the test
set has answers — `predict_results.txt` with its accuracies and the best dev value when one is
known; `predict_file` names the prediction feature cache and `num_keep_checkpoint` is the
number of numbered checkpoints kept.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.model_source import task_config, task_model_fn, task_tokenizer
from albert_tf.config import AlbertConfig
from albert_tf.finetuning.objective import classification_objective
from albert_tf.finetuning.preflight import check_init_checkpoint, check_vocab_fits
from albert_tf.finetuning.records import eval_dataset, train_dataset_fn
from albert_tf.finetuning.run import FineTuningError, FineTuningRun, FixedStepOptions
from albert_tf.models import AlbertMultipleChoice
from albert_tf.race import records
from albert_tf.race.examples import NUM_OPTIONS, RaceSplit, levels_to_read, read_race_split
from albert_tf.race.features import check_lengths, convert_examples_to_features
from albert_tf.race.metrics import labelled, race_metrics
from albert_tf.race.predictions import PREDICTIONS_FILE, write_predictions
from albert_tf.training import write_eval_results

TASK_NAMES = ("race",)
METRIC_KEY = "eval_accuracy"
PREDICT_RESULTS_FILE = "predict_results.txt"
# Which split each phase reads, and its default cache file in output_dir (faithfulness §10.1).
PHASE_SPLITS = {"train": "train", "eval": "dev", "predict": "test"}
DEFAULT_CACHE = {"train": "train.tf_record", "dev": "eval.tf_record", "test": "predict.tf_record"}


class RaceRunError(FineTuningError):
    """Inconsistent options (one line, shown without a traceback by run_race)."""


@dataclasses.dataclass(kw_only=True)
class RaceRunOptions(FixedStepOptions):
    """run_race's flags (faithfulness §10.1 names and defaults) plus the loop's shared ones."""

    data_dir: str
    albert_config_file: str | None = None
    task_name: str = "race"
    vocab_file: str | None = None
    spm_model_file: str | None = None
    train_file: str | None = None
    eval_file: str | None = None
    predict_file: str | None = None
    do_lower_case: bool = True
    dropout_prob: float = 0.1
    max_seq_length: int = 512
    max_qa_length: int = 128
    num_keep_checkpoint: int = 5
    high_only: bool = False
    middle_only: bool = False
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    learning_rate: float = 1e-5
    train_step: int = 12000
    warmup_step: int = 1000
    save_checkpoints_steps: int = 100


@dataclasses.dataclass
class RaceRunResult:
    """What a run did: last training logs, every eval, the best, prediction outputs."""

    train_logs: dict[str, float] = dataclasses.field(default_factory=dict)
    eval_results: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    best_step: int | None = None
    best_results: dict[str, Any] | None = None
    predict_results: dict[str, Any] | None = None
    prediction_file: str | None = None
    restore_report: Any = None


def _validate(opts: RaceRunOptions) -> None:
    if not (opts.do_train or opts.do_eval or opts.do_predict):
        raise RaceRunError("at least one of do_train, do_eval or do_predict must be true")
    if opts.task_name.lower() not in TASK_NAMES:
        raise RaceRunError(f"task_name must be one of {', '.join(TASK_NAMES)}, got {opts.task_name!r}")
    if opts.do_train and opts.train_step < 1:
        raise RaceRunError(f"train_step must be >= 1 with do_train, got {opts.train_step}")
    if opts.init_checkpoint and opts.albert_hub_module_handle:
        raise RaceRunError("init_checkpoint and albert_hub_module_handle both give the initial "
                           "weights; use one of them")
    if opts.num_keep_checkpoint < 1:
        raise RaceRunError(f"num_keep_checkpoint must be >= 1, got {opts.num_keep_checkpoint}")
    try:
        check_lengths(opts.max_seq_length, opts.max_qa_length)
    except ValueError as e:
        raise RaceRunError(str(e)) from None


class RaceRun(FineTuningRun):
    """One invocation's state: examples, cached features, trainer, evaluator, predictor."""

    opts: RaceRunOptions

    def __init__(self, opts: RaceRunOptions, strategy: tf.distribute.Strategy | None = None):
        super().__init__(opts, strategy)
        _validate(opts)
        self.levels = levels_to_read(opts.high_only, opts.middle_only)
        self.config: AlbertConfig = task_config(opts.albert_config_file,
                                                opts.albert_hub_module_handle, opts.init_checkpoint)
        if opts.max_seq_length > self.config.max_position_embeddings:
            raise RaceRunError(f"max_seq_length {opts.max_seq_length} exceeds the model's "
                               f"max_position_embeddings {self.config.max_position_embeddings}")
        self.tokenizer = task_tokenizer(opts.vocab_file, opts.spm_model_file, opts.do_lower_case,
                                        opts.albert_hub_module_handle, opts.init_checkpoint)
        check_vocab_fits(self.config, self.tokenizer, opts)
        model_fn = task_model_fn(self._build_model, self.config, opts.albert_hub_module_handle)
        check_init_checkpoint(model_fn, opts)
        self.result = RaceRunResult()
        # Read every split first: bad input stops the run before anything is written.
        wanted = [PHASE_SPLITS[phase] for phase, on in (
            ("train", opts.do_train), ("eval", opts.do_eval), ("predict", opts.do_predict)) if on]
        self.data: dict[str, RaceSplit] = {
            split: read_race_split(opts.data_dir, split, self.levels,
                                   self.tokenizer.uses_sentencepiece, opts.do_lower_case,
                                   require_answers=split != "test")
            for split in wanted}
        for split, data in self.data.items():
            logging.info("RACE %s: %d questions (%s)", split, len(data.examples),
                         ", ".join(self.levels))
        self.records = {split: self._records(split) for split in wanted}
        self.decode = records.race_decoder(opts.max_seq_length)
        self.buckets = self.length_buckets(opts.max_seq_length)  # by the longest option
        self.setup(model_fn, classification_objective(), METRIC_KEY,
                   num_train_steps=opts.train_step, num_warmup_steps=opts.warmup_step,
                   optimizer_name="adamw", keep_checkpoint_max=opts.num_keep_checkpoint)

    # ----- inputs -----
    def _records(self, split: str) -> str:
        opts = self.opts
        named = {"train": opts.train_file, "dev": opts.eval_file, "test": opts.predict_file}[split]
        path = named or os.path.join(opts.output_dir, DEFAULT_CACHE[split])
        data = self.data[split]
        settings = records.cache_settings(split, data, self.levels, opts.max_seq_length,
                                          opts.max_qa_length, opts.do_lower_case, self.tokenizer)
        return records.cached_race_records(
            path, settings, lambda: convert_examples_to_features(
                data.examples, self.tokenizer, opts.max_seq_length, opts.max_qa_length),
            owned=not named)

    def _dataset(self, split: str, batch_size: int) -> tf.data.Dataset:
        return eval_dataset(self.records[split], batch_size, self.decode, self.buckets)

    # ----- model -----
    def _build_model(self, config: AlbertConfig, encoder) -> AlbertMultipleChoice:
        return AlbertMultipleChoice(config, NUM_OPTIONS, self.opts.dropout_prob, encoder=encoder)

    # ----- evaluation -----
    def _logits(self, split: str, batch_size: int):
        outputs = self.predictor.run(self._dataset(split, batch_size),
                                     len(self.data[split].examples), f"Predicting RACE {split}")
        logits = outputs["logits"]
        examples = self.data[split].examples
        if len(logits) != len(examples):
            raise RaceRunError(f"{self.records[split]}: {len(logits)} feature records for "
                               f"{len(examples)} questions; delete the file to rebuild it")
        return logits

    def evaluate_current(self, step: int) -> dict[str, float]:
        """Accuracy overall / middle / high and the losses of the current weights on dev."""
        logits = self._logits("dev", self.opts.eval_batch_size)
        results = race_metrics(logits, self.data["dev"].examples, self.opts.eval_batch_size)
        self.report(f"Eval results ({len(logits)} questions)", step, results)
        return results

    # ----- phases -----
    def train(self) -> None:  # pylint: disable=arguments-differ
        opts = self.opts
        self.result.train_logs = super().train(train_dataset_fn(
            self.records["train"], opts.train_batch_size, self.decode, opts.seed,
            buckets=self.buckets),
            evaluate_on_save=opts.do_eval)
        self.result.eval_results = self.eval_results

    def evaluate(self) -> None:
        super().evaluate()
        self.result.eval_results = self.eval_results
        self.result.best_step = self.evaluator.best_step
        self.result.best_results = self.evaluator.best_results

    def predict(self) -> None:
        """predictions.tsv with the best weights; test metrics when the test set has answers."""
        opts = self.opts
        source = self.load_best_weights()
        logging.info("Predicting RACE test with %s", source)
        logits = self._logits("test", opts.predict_batch_size)
        examples = self.data["test"].examples
        tf.io.gfile.makedirs(opts.output_dir)
        self.result.prediction_file = write_predictions(
            os.path.join(opts.output_dir, PREDICTIONS_FILE), examples, logits)
        logging.info("Wrote %d predictions to %s", len(examples), self.result.prediction_file)
        results: dict[str, Any] = race_metrics(logits, examples, opts.predict_batch_size)
        if not results:
            logging.info("The test set has no answers: predictions only")
            return
        unlabelled = int((~labelled(examples)).sum())
        if unlabelled:
            logging.warning("%d test questions have no answer; metrics cover the other %d",
                            unlabelled, len(examples) - unlabelled)
        results["checkpoint"] = source
        if self.evaluator.best_value is not None:
            results[f"best_dev_{METRIC_KEY}"] = self.evaluator.best_value
            results["best_dev_step"] = self.evaluator.best_step
        self.report("Test results", int(self.trainer.global_step.numpy()), results,
                    summary_dir=None)
        write_eval_results(os.path.join(opts.output_dir, PREDICT_RESULTS_FILE), results)
        self.result.predict_results = results


def run(opts: RaceRunOptions, strategy: tf.distribute.Strategy | None = None) -> RaceRunResult:
    """Does what the options ask, in the original's order; returns what happened."""
    race = RaceRun(opts, strategy)
    if opts.do_train:
        race.train()
    if opts.do_eval:
        race.evaluate()
    if opts.do_predict:
        race.predict()
    return race.result
