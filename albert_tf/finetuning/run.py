"""The one fine-tuning run template: the set-up sequence and the phases, written once
(faithfulness §8.6, §9.8, §10.4).

A task (GLUE, SQuAD, RACE) subclasses `FineTuningRun` and supplies only what differs: its
option checks (`validate`), its model (`build_model`), its examples (`read_examples`), its
feature caches (`build_features`), its length buckets (`choose_buckets`), its objective,
metric and schedule (`training_plan`), its training input (`train_dataset_fn`), its metrics
(`evaluate_current`) and its outputs (`predict`, `export`); each hook returns what it makes.
The template's set-up (`prepare`, in plain steps, in the original's order; bad input fails
before anything is written):

  options checked (`FineTuningOptions.problems`, then `validate`) → config (`--albert_config_file`, an encoder export or a Hugging Face
  directory) → max_seq_length against the config → tokenizer → vocabulary against the
  config → model function → `--init_checkpoint` checked against it → examples read
  (`self.examples`) → features built or reused (`self.features`: records and decoder) →
  length buckets → trainer, evaluator and predictor (`setup`).

`run()` then does the phases the options ask for: `train` (optionally evaluating each
checkpoint as it is saved) → `evaluate` the checkpoints not evaluated yet, keeping the best
as `model.ckpt-best` (`checkpoint_eval.CheckpointEvaluator`; with --do_eval but no
--do_train, as a side-car following a trainer's checkpoints to --train_step,
`follow_training`) → `predict` with the best weights (`self.predictor`,
`inference.Predictor`, under the strategy) → `export` → `finish`. Results are reported
through `report` (absl log + one TensorBoard writer a directory).
"""

from __future__ import annotations

import abc
import dataclasses
import math
import os
from typing import Any, Callable, ClassVar, Generic, Mapping, Sequence, TypeVar

import keras
import tensorflow as tf
from absl import logging

from albert_tf.model_source import (initial_checkpoint, plan_sources, source_config,
                                    source_tokenizer, task_model_fn)
from albert_tf.models.precision import float32_copy
from albert_tf.runtime.options import field_default
from albert_tf.checkpoints.warm_starting import RestoreReport, head_parts, warm_start
from albert_tf.config import AlbertConfig
from albert_tf.finetuning.bucketing import LengthBuckets, uses_static_shapes
from albert_tf.finetuning.inference import Predictor
from albert_tf.finetuning.options import (ExportOptions, FineTuningError, FineTuningOptions,
                                          FineTuningResult, FixedStepOptions)
from albert_tf.finetuning.preflight import check_init_checkpoint, check_vocab_fits
from albert_tf.finetuning.records import eval_dataset, train_dataset_fn
from albert_tf.training import Callback, Objective, Trainer, create_optimizer
from albert_tf.training.checkpoint_eval import (BEST_PREFIX, CheckpointEvaluator, PollSettings,
                                                follow_training, numbered_checkpoints)
from albert_tf.training.loop import LoopConfig
from albert_tf.training.loop_options import CheckpointSettings
from albert_tf.training.summaries import write_scalars

__all__ = ["EvaluateOnSave", "ExportOptions", "Features", "FineTuningError", "FineTuningOptions",
           "FineTuningResult", "FineTuningRun", "FixedStepOptions", "TrainingPlan"]

DatasetFn = Callable[[tf.distribute.InputContext], tf.data.Dataset]
OptionsT = TypeVar("OptionsT", bound=FineTuningOptions)
ResultT = TypeVar("ResultT", bound=FineTuningResult)


@dataclasses.dataclass(kw_only=True)
class TrainingPlan:
    """What a task's training and prediction need from the template's `setup`.

    Args:
      objective / metric_key: the loop's loss and the eval metric selecting the best checkpoint.
      num_train_steps / num_warmup_steps: the schedule (used with do_train).
      predict_outputs / model_inputs: what `self.predictor` gathers, and how it feeds the
        model (see `inference.Predictor`).
    """

    objective: Objective
    metric_key: str
    num_train_steps: int
    num_warmup_steps: int
    optimizer_name: str = "adamw"
    keep_checkpoint_max: int = field_default(CheckpointSettings, "keep_checkpoint_max")
    predict_outputs: Sequence[str] = ("logits",)
    model_inputs: Callable[[dict], dict] | None = None


@dataclasses.dataclass
class Features:
    """What `build_features` makes: each split's cached feature TFRecord file ("train",
    "dev", "test", …) and the decoder of their records (`finetuning.records.feature_decoder`)
    for the template's datasets. A task may subclass it to carry more (SQuAD's windows)."""

    records: dict[str, str]
    decode: Callable | None = None


class EvaluateOnSave(Callback):
    """Evaluates each checkpoint as the loop writes it (its weights are the live ones)."""

    def __init__(self, evaluator: CheckpointEvaluator, results: list):
        self.evaluator = evaluator
        self.results = results

    def on_checkpoint(self, step: int, path: str | None) -> None:
        if path and step > self.evaluator.last_step:
            self.results.append(self.evaluator.evaluate(step, path, restore=False))


class FineTuningRun(abc.ABC, Generic[OptionsT, ResultT]):
    """One fine-tuning invocation: the set-up steps (`prepare`) and the phases (`run`).

    A task names its options and result types, its one-line error class and its result class
    (`class GlueRun(FineTuningRun[GlueRunOptions, GlueRunResult], error=GlueRunError,
    result=GlueRunResult)`) and implements the hooks named in the module docstring; the
    attributes below are the template's, ready for the hooks that come after them.
    """

    error: ClassVar[type[FineTuningError]] = FineTuningError
    result_type: ClassVar[type[FineTuningResult]] = FineTuningResult

    opts: OptionsT
    sources: Any  # model_source_plan.ModelSourcePlan: which flag gives config, tokenizer
    config: AlbertConfig
    tokenizer: Any  # tokenization.FullTokenizer
    model_fn: Callable[..., keras.Model]
    result: ResultT
    examples: Any  # what `read_examples` returned
    features: "Features"  # what `build_features` returned; its records and decoder:
    records: dict[str, str]
    decode: Callable | None
    buckets: LengthBuckets | None
    trainer: Trainer
    evaluator: CheckpointEvaluator
    predictor: Predictor

    def __init_subclass__(cls, error: type[FineTuningError] | None = None,
                          result: type[FineTuningResult] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if error is not None:
            cls.error = error
        if result is not None:
            cls.result_type = result

    def __init__(self, opts: OptionsT, strategy: tf.distribute.Strategy | None = None):
        """Keeps the options and the strategy; nothing is checked, read or built before
        `prepare` (which `run` calls)."""
        self.opts = opts
        self.strategy = strategy or tf.distribute.get_strategy()
        self.restore_report: RestoreReport | None = None
        self.eval_results: list[dict[str, Any]] = []
        self.result = self.result_type(eval_results=self.eval_results)
        self._writers: dict[str, Any] = {}
        self._initial_weights_loaded = False
        self._prepared = False

    def prepare(self) -> "FineTuningRun[OptionsT, ResultT]":
        """The set-up in plain steps, in the original's order, every check and read before
        anything is written; each step returns what it makes and the run keeps it."""
        opts = self.opts
        self.check_options()
        # Which flag gives the config and the tokenizer (with --albert_hub_module_handle: the
        # export's config and SentencePiece model, Q21), decided once for loading and checks.
        self.sources = plan_sources(opts)
        self.config = source_config(self.sources)
        if opts.max_seq_length > self.config.max_position_embeddings:
            raise self.error(f"max_seq_length {opts.max_seq_length} exceeds the model's "
                             f"max_position_embeddings {self.config.max_position_embeddings}")
        self.tokenizer = source_tokenizer(self.sources, opts.do_lower_case)
        check_vocab_fits(self.config, self.tokenizer, self.sources)
        self.model_fn = task_model_fn(self.build_model, self.config,
                                      opts.albert_hub_module_handle)
        check_init_checkpoint(self.model_fn, opts)
        # --init_checkpoint, or a TF1 Hub module handle: the checkpoint the warm start reads.
        self.initial_checkpoint = initial_checkpoint(opts.init_checkpoint,
                                                     opts.albert_hub_module_handle)
        if self.initial_checkpoint and not opts.init_checkpoint:
            check_init_checkpoint(self.model_fn, opts, flag="albert_hub_module_handle")
        self.examples = self.read_examples()
        self.features = self.build_features(self.examples)
        self.records, self.decode = self.features.records, self.features.decode
        self.buckets = self.choose_buckets()
        plan = self.training_plan()
        self.result.num_train_steps = plan.num_train_steps if opts.do_train else 0
        self.trainer, self.evaluator, self.predictor = self.setup(plan)
        self._prepared = True
        return self

    def check_options(self) -> None:
        """At least one phase asked for, every option within its declaration
        (`FineTuningOptions.problems`), then the task's own rules (`validate`)."""
        switches = self.opts.phase_switches()
        if not any(switches.values()):
            names = list(switches)
            raise self.error(f"at least one of {', '.join(names[:-1])} or {names[-1]} is "
                             "required")
        problems = self.opts.problems()
        if problems:
            raise self.error(problems[0])
        self.validate()

    # ----- what a task supplies -----
    @abc.abstractmethod
    def validate(self) -> None:
        """Raises `self.error` for inconsistent options (before any file is read)."""

    @abc.abstractmethod
    def build_model(self, config: AlbertConfig, encoder: keras.layers.Layer | None
                    ) -> keras.Model:
        """The task model over `encoder` (an encoder export), or a fresh encoder for None."""

    @abc.abstractmethod
    def read_examples(self) -> Any:
        """Every split the run needs, in the task's form (bad input fails here, before any
        cache file); the run keeps it as `self.examples`."""

    @abc.abstractmethod
    def build_features(self, examples: Any) -> "Features":
        """The feature caches of `examples`' splits, built or reused, and their decoder."""

    def choose_buckets(self) -> LengthBuckets | None:
        """The bucket lengths of this run's batches (`length_buckets` at max_seq_length)."""
        return self.length_buckets(self.opts.max_seq_length)

    @abc.abstractmethod
    def training_plan(self) -> TrainingPlan:
        """The objective, selection metric, schedule and prediction outputs."""

    def train_dataset_fn(self) -> DatasetFn:
        """The loop's training input: `self.records["train"]` decoded by `self.decode`."""
        opts = self.opts
        return train_dataset_fn(self.records["train"], opts.train_batch_size, self.decode,
                                opts.seed, buckets=self.buckets)

    def dataset(self, split: str, batch_size: int) -> tf.data.Dataset:
        """Eval/predict input of a split's records, in order (grouped by length with buckets)."""
        return eval_dataset(self.records[split], batch_size, self.decode, self.buckets)

    @abc.abstractmethod
    def evaluate_current(self, step: int) -> dict[str, float]:
        """Metrics of the model's current weights on the eval set (usually from
        `self.predictor.run(...)`, logged with `self.report`)."""

    def predict(self) -> None:
        """The task's predictions with the best weights (--do_predict)."""
        raise FineTuningError(f"{type(self).__name__} has no predict phase")

    def export(self) -> None:
        """The task's export of the best weights (--export_dir)."""
        raise FineTuningError(f"{type(self).__name__} has no export phase")

    def finish(self) -> None:
        """Anything the task reports at the end of a run (nothing by default)."""

    # ----- the phases -----
    def run(self) -> ResultT:
        """Does what the options ask, in the original's order (after `prepare`); returns what
        happened."""
        if not self._prepared:
            self.prepare()
        opts = self.opts
        if opts.do_train:
            self.train()
        if opts.evaluates_checkpoints:
            self.evaluate()
        if opts.do_predict:
            self.predict()
        if opts.export_target:
            self.export()
        self.finish()
        return self.result

    # ----- construction -----
    def setup(self, plan: TrainingPlan) -> tuple[Trainer, CheckpointEvaluator, Predictor]:
        """The Trainer (AdamW/LAMB with the original's schedule), the evaluator and the
        predictor (its graph chosen at its first run, for the lengths of its data)."""
        opts = self.opts
        steps = plan.num_train_steps if opts.do_train else 0
        loop_config = LoopConfig.from_options(
            opts, output_dir=opts.output_dir, num_train_steps=steps,
            train_batch_size=opts.train_batch_size,
            iterations_per_loop=min(opts.iterations_per_loop, opts.save_checkpoints_steps),
            save_checkpoints_steps=opts.save_checkpoints_steps,
            keep_checkpoint_max=plan.keep_checkpoint_max,
            num_input_lengths=len(self.buckets.lengths) if self.buckets else 1)
        optimizer_fn = None
        if opts.do_train:
            def optimizer_fn():
                return create_optimizer(plan.optimizer_name, opts.learning_rate,
                                        plan.num_train_steps, plan.num_warmup_steps)
        init_fn = (self.warm_start if self.initial_checkpoint
                   else self.export_start if opts.albert_hub_module_handle else None)
        trainer = Trainer(self.model_fn, plan.objective, loop_config, optimizer_fn,
                          self.strategy, init_fn=init_fn)
        evaluator = CheckpointEvaluator(opts.output_dir, plan.metric_key, self.evaluate_current,
                                        trainer.restore_model)
        # The prediction graph (plain or XLA) is chosen at the first prediction, by dtype,
        # CPU and the batches and padded lengths of its data (`execution_rules.use_xla`).
        predictor = Predictor(trainer.model, trainer.strategy, plan.predict_outputs,
                              plan.model_inputs, jit_compile=None, dtype=opts.dtype)
        return trainer, evaluator, predictor

    def warm_start(self, model: keras.Model) -> None:
        """--init_checkpoint (original TF1, HF, ours or a TF1 Hub module) or a TF1 Hub module
        handle: every encoder variable must be restored, the head may start fresh; the report
        goes to the run's result too."""
        self.restore_report = warm_start(model, self.initial_checkpoint, head_parts(model))
        self.result.restore_report = self.restore_report

    def export_start(self, model: keras.Model) -> str:
        """Where a run on an encoder export starts (the Trainer's init_fn; the export's
        weights are in the model already): the encoder's variables from the export, the
        head's from their initialisers, each counted."""
        encoder_ids = {id(v) for v in model.encoder.trainable_variables}
        fresh = sum(id(v) not in encoder_ids for v in model.trainable_variables)
        head = " + ".join(part.replace("_", "-") for part in head_parts(model)) or "head"
        return (f"{len(model.trainable_variables) - fresh} encoder variables from the export, "
                f"{fresh} {head} variables freshly initialised")

    def load_initial_weights(self) -> None:
        """--init_checkpoint (or the export's weights) into the model, once per run."""
        if self._initial_weights_loaded:
            return
        if self.initial_checkpoint:
            with self.strategy.scope():
                self.warm_start(self.trainer.model)
        else:
            logging.info("Using the weights of %s", self.opts.albert_hub_module_handle)
        self._initial_weights_loaded = True

    def length_buckets(self, max_seq_length: int, min_length: int = 1) -> LengthBuckets | None:
        """The bucket lengths of this run's batches, or None for batches padded to
        max_seq_length (--nobucket_by_length, or a TPU by default)."""
        enabled = self.opts.bucket_by_length
        static = uses_static_shapes(self.strategy)
        if enabled and static:
            raise FineTuningError("bucket_by_length needs batches of varying length, which a "
                                  "TPU cannot run; pass --nobucket_by_length")
        if enabled is None:
            enabled = not static
        if not enabled:
            logging.info("Batches are padded to max_seq_length %d", max_seq_length)
            return None
        buckets = LengthBuckets(max_seq_length, min_length=min_length)
        logging.info("Length-bucketed batches, padded to one of %s: the train and prediction "
                     "steps are traced once with an open sequence axis (under XLA, compiled "
                     "once per length: at most %d times)", list(buckets.lengths),
                     len(buckets.lengths))
        return buckets

    def float32_model(self) -> keras.Model:
        """The model for a float export (TFLite has no bfloat16 kernels): the trained model,
        or under --dtype=bfloat16/float16 a float32 copy holding its current weights."""
        model = self.trainer.model
        copy = float32_copy(model, self.model_fn)
        if copy is not model:
            logging.info("Exporting a float32 copy of the %s model", model.dtype_policy.name)
        return copy

    @property
    def has_initial_weights(self) -> bool:
        return bool(self.opts.init_checkpoint or self.opts.albert_hub_module_handle)

    # ----- evaluation -----
    def report(self, title: str, step: int, results: Mapping[str, float],
               summary_dir: str | None = "eval") -> None:
        """Logs the results and writes them as TensorBoard scalars under output_dir/summary_dir."""
        logging.info("***** %s at step %d *****", title, step)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if summary_dir and self.trainer.is_chief:
            if summary_dir not in self._writers:  # one writer a directory, for the whole run
                self._writers[summary_dir] = tf.summary.create_file_writer(
                    os.path.join(self.opts.output_dir, summary_dir))
            writer = self._writers[summary_dir]
            write_scalars(writer, step, {k: float(v) for k, v in results.items()
                                         if isinstance(v, (int, float)) and not isinstance(v, bool)
                                         and not math.isnan(v)})
            writer.flush()

    # ----- phases -----
    def train(self) -> None:
        """Trains the scheduled steps on `train_dataset_fn()`; with --do_eval each saved
        checkpoint is evaluated as it is written."""
        if not self.has_initial_weights:
            logging.warning("No --init_checkpoint or --albert_hub_module_handle: the encoder "
                            "starts from random initialisation (expected only for tests)")
        if self.opts.evaluates_checkpoints:
            self.trainer.callbacks.append(EvaluateOnSave(self.evaluator, self.eval_results))
        self.result.train_logs = self.trainer.train(self.train_dataset_fn())

    def evaluate(self) -> None:
        """Evaluates every checkpoint not evaluated yet (or the initial weights if none);
        as a side-car (`FixedStepOptions.follows_training`), each new one until the last
        training step."""
        opts = self.opts
        if opts.follows_training():
            self.follow_training(opts.train_step, opts.poll_settings())
        elif self.evaluator.pending():
            self.eval_results += self.evaluator.evaluate_pending()
        elif self.evaluator.best_step is None:
            if not self.has_initial_weights:
                raise FineTuningError(f"nothing to evaluate: no model.ckpt-<step> in "
                                      f"{self.opts.output_dir} and no --init_checkpoint")
            self.load_initial_weights()
            self.eval_results.append(self.evaluator.evaluate(0, None, restore=False))
        else:
            logging.info("Every checkpoint in %s was already evaluated", self.opts.output_dir)
        if self.evaluator.best_step is not None:
            logging.info("Best %s = %s at step %d (%s)", self.evaluator.metric_key,
                         self.evaluator.best_value, self.evaluator.best_step,
                         self.evaluator.best_path)
        self.result.best_step = self.evaluator.best_step
        self.result.best_results = self.evaluator.best_results

    def follow_training(self, final_step: int, settings: PollSettings) -> None:
        """Polls output_dir beside a trainer: each new checkpoint evaluated once, in step
        order, until `final_step` (`checkpoint_eval.follow_training`)."""
        follow_training(self.evaluator, final_step, settings, final_step_flag="--train_step",
                        hint=(" (To evaluate the initial weights instead of following a "
                              "training run, pass --train_step=0.)"
                              if self.has_initial_weights else ""),
                        results=self.eval_results)

    def load_best_weights(self) -> str:
        """Loads model.ckpt-best, else the newest checkpoint, else the initial weights."""
        best = os.path.join(self.opts.output_dir, BEST_PREFIX)
        if tf.io.gfile.exists(best + ".index"):
            self.trainer.restore_model(best)
            return best
        existing = numbered_checkpoints(self.opts.output_dir)
        if existing:
            logging.warning("No %s (run with --do_eval to select it); using the newest "
                            "checkpoint %s", best, existing[-1][1])
            self.trainer.restore_model(existing[-1][1])
            return existing[-1][1]
        if self.has_initial_weights:
            logging.warning("No checkpoint in %s; using the initial weights", self.opts.output_dir)
            self.load_initial_weights()
            return self.opts.init_checkpoint or self.opts.albert_hub_module_handle
        raise FineTuningError(f"no weights to use: no checkpoint in {self.opts.output_dir} and "
                              "no --init_checkpoint")
