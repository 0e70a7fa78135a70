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
import functools
import os
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf.config import AlbertConfig
from albert_tf.finetuning.run import (Features, FineTuningError, FineTuningResult, FineTuningRun,
                                      TrainingPlan)
from albert_tf.race import records
from albert_tf.race.examples import RaceSplit, levels_to_read, read_race_split
from albert_tf.race.features import check_lengths, convert_examples_to_features
from albert_tf.race.metrics import labelled, race_metrics
from albert_tf.race.modeling import multiple_choice, race_objective
from albert_tf.race.options import RaceRunOptions
from albert_tf.race.predictions import PREDICTIONS_FILE, write_predictions
from albert_tf.training import write_eval_results

METRIC_KEY = "eval_accuracy"
PREDICT_RESULTS_FILE = "predict_results.txt"
# Which split each phase reads, and its default cache file in output_dir (faithfulness §10.1).
PHASE_SPLITS = {"train": "train", "eval": "dev", "predict": "test"}
DEFAULT_CACHE = {"train": "train.tf_record", "dev": "eval.tf_record", "test": "predict.tf_record"}


class RaceRunError(FineTuningError):
    """Inconsistent options (one line, shown without a traceback by run_race)."""


@dataclasses.dataclass
class RaceRunResult(FineTuningResult):
    """What a run did: the shared record plus the prediction outputs."""

    predict_results: dict[str, Any] | None = None
    prediction_file: str | None = None


class RaceRun(FineTuningRun[RaceRunOptions, RaceRunResult],
              error=RaceRunError, result=RaceRunResult):
    """One invocation's state: examples, cached features, trainer, evaluator, predictor."""

    def validate(self) -> None:
        opts = self.opts
        if opts.init_checkpoint and opts.albert_hub_module_handle:
            raise RaceRunError("init_checkpoint and albert_hub_module_handle both give the "
                               "initial weights; use one of them")
        try:
            check_lengths(opts.max_seq_length, opts.max_qa_length)
        except ValueError as e:
            raise RaceRunError(str(e)) from None
        _ = self.levels  # --high_only with --middle_only: RaceDataError, one line

    @functools.cached_property
    def levels(self) -> tuple[str, ...]:
        """The school levels --high_only / --middle_only select."""
        return levels_to_read(self.opts.high_only, self.opts.middle_only)

    def build_model(self, config: AlbertConfig, encoder: keras.layers.Layer | None
                    ) -> keras.Model:
        return multiple_choice(config, self.opts.dropout_prob, encoder)

    # ----- inputs -----
    def read_examples(self) -> dict[str, RaceSplit]:
        """Every split the run needs (bad input stops the run before anything is written)."""
        opts = self.opts
        wanted = [PHASE_SPLITS[phase] for phase, on in (
            ("train", opts.do_train), ("eval", opts.do_eval), ("predict", opts.do_predict)) if on]
        splits = {split: read_race_split(opts.data_dir, split, self.levels,
                                         self.tokenizer.uses_sentencepiece, opts.do_lower_case,
                                         require_answers=split != "test")
                  for split in wanted}
        for split, data in splits.items():
            logging.info("RACE %s: %d questions (%s)", split, len(data.examples),
                         ", ".join(data.levels))
        return splits

    def build_features(self, examples: dict[str, RaceSplit]) -> Features:
        """Each split's cache: the file named by --train_file/--eval_file/--predict_file (the
        user's: refused when stale) or output_dir's (ours: rebuilt when stale)."""
        opts = self.opts
        cached = {}
        for split, data in examples.items():
            named = {"train": opts.train_file, "dev": opts.eval_file,
                     "test": opts.predict_file}[split]
            settings = records.cache_settings(split, data, self.levels,
                                              opts.max_seq_length, opts.max_qa_length,
                                              opts.do_lower_case, self.tokenizer)
            cached[split] = records.cached_race_records(
                named or os.path.join(opts.output_dir, DEFAULT_CACHE[split]), settings,
                lambda data=data: convert_examples_to_features(
                    data.examples, self.tokenizer, opts.max_seq_length, opts.max_qa_length),
                owned=not named)
        return Features(cached, records.race_decoder(opts.max_seq_length))

    # Length buckets: the template's, at max_seq_length (each question by its longest option).

    def training_plan(self) -> TrainingPlan:
        opts = self.opts
        return TrainingPlan(objective=race_objective(), metric_key=METRIC_KEY,
                            num_train_steps=opts.train_step, num_warmup_steps=opts.warmup_step,
                            keep_checkpoint_max=opts.num_keep_checkpoint)

    # ----- evaluation and outputs -----
    def _logits(self, split: str, batch_size: int):
        outputs = self.predictor.run(self.dataset(split, batch_size),
                                     len(self.examples[split].examples), f"Predicting RACE {split}")
        logits = outputs["logits"]
        examples = self.examples[split].examples
        if len(logits) != len(examples):
            raise RaceRunError(f"{self.records[split]}: {len(logits)} feature records for "
                               f"{len(examples)} questions; delete the file to rebuild it")
        return logits

    def evaluate_current(self, step: int) -> dict[str, float]:
        """Accuracy overall / middle / high and the losses of the current weights on dev."""
        logits = self._logits("dev", self.opts.eval_batch_size)
        results = race_metrics(logits, self.examples["dev"].examples, self.opts.eval_batch_size)
        self.report(f"Eval results ({len(logits)} questions)", step, results)
        return results

    def predict(self) -> None:
        """predictions.tsv with the best weights; test metrics when the test set has answers."""
        opts = self.opts
        source = self.load_best_weights()
        logging.info("Predicting RACE test with %s", source)
        logits = self._logits("test", opts.predict_batch_size)
        examples = self.examples["test"].examples
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
    return RaceRun(opts, strategy).run()
