"""The phases every fine-tuning script shares, around the one training loop (faithfulness
§8.6, §9.8, §10.4).

A task (GLUE, SQuAD, RACE) subclasses `FineTuningRun`, reads its data and builds or reuses
its feature caches, then calls `setup` with its model, objective, selection metric, step
counts and prediction outputs, and implements `evaluate_current`. The shared path is then:
build the model (`Trainer`) → warm start (`--init_checkpoint`, logging the encoder/head
report; or an encoder export's weights) → `train` (optionally evaluating each checkpoint as
it is saved) → `evaluate` the checkpoints not evaluated yet, keeping the best as
`model.ckpt-best` (`checkpoint_eval.CheckpointEvaluator`; with --do_eval but no --do_train,
as a side-car following a trainer's checkpoints to --train_step, `follow_training`) →
`load_best_weights` and predict
with `self.predictor` (`inference.Predictor`, under the strategy) → the task's
post-processing and scoring, reported through `report` (absl log + one TensorBoard writer).
"""

from __future__ import annotations

import abc
import dataclasses
import math
import os
from typing import Any, Callable, Mapping, Sequence

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.warm_starting import RestoreReport, head_parts, warm_start
from albert_tf.finetuning.bucketing import LengthBuckets, uses_static_shapes
from albert_tf.finetuning.inference import Predictor
from albert_tf.training import Callback, LoopConfig, Objective, Trainer, create_optimizer
from albert_tf.training.checkpoint_eval import (BEST_PREFIX, CheckpointEvaluator, PollSettings,
                                                follow_training, numbered_checkpoints)
from albert_tf.training.summaries import write_scalars


class FineTuningError(ValueError):
    """Inconsistent options or nothing to work with (one line, no traceback in the scripts)."""


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions:
    """The flags every fine-tuning script has (run_classifier, run_squad, run_race): the
    original's common ones plus the loop's."""

    output_dir: str
    init_checkpoint: str | None = None
    albert_hub_module_handle: str | None = None
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    # The training loop's shared flags.
    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    seed: int | None = None
    clip_norm_mode: str = "original"
    recompute_grad: bool = False
    # Length-bucketed batches (`bucketing`); None: on, except on TPU.
    bucket_by_length: bool | None = None


@dataclasses.dataclass(kw_only=True)
class FixedStepOptions(FineTuningOptions):
    """What run_classifier and run_race add: a step budget (not epochs, as run_squad) and
    a dev split evaluated apart from prediction."""

    do_eval: bool = False
    eval_batch_size: int = 8
    train_step: int = 1000
    warmup_step: int = 0
    # Side-car evaluation (--do_eval without --do_train): `training.checkpoint_eval`.
    eval_poll_secs: float = 60.0
    eval_timeout_secs: float = 3600.0

    def poll_settings(self) -> PollSettings:
        """--eval_poll_secs / --eval_timeout_secs (ValueError naming the flag if not > 0)."""
        return PollSettings(self.eval_poll_secs, self.eval_timeout_secs)

    def follows_training(self) -> bool:
        """--do_eval without --do_train follows a training run in output_dir to
        --train_step, as the original; --train_step=0 evaluates what is there once."""
        return self.do_eval and not self.do_train and self.train_step > 0


class EvaluateOnSave(Callback):
    """Evaluates each checkpoint as the loop writes it (its weights are the live ones)."""

    def __init__(self, evaluator: CheckpointEvaluator, results: list):
        self.evaluator = evaluator
        self.results = results

    def on_checkpoint(self, step: int, path: str | None) -> None:
        if path and step > self.evaluator.last_step:
            self.results.append(self.evaluator.evaluate(step, path, restore=False))


class FineTuningRun(abc.ABC):
    """One fine-tuning invocation: trainer, evaluator, and the train/evaluate/predict phases.

    Subclasses call `setup(model_fn, objective, metric_key, num_train_steps, ...)` once
    their inputs are ready, and implement `evaluate_current(step)` (metrics of the model's
    current weights, usually from `self.predictor.run(...)`, logged with `self.report`).
    """

    opts: FineTuningOptions
    trainer: Trainer
    evaluator: CheckpointEvaluator
    predictor: Predictor

    def __init__(self, opts: FineTuningOptions, strategy: tf.distribute.Strategy | None = None):
        if isinstance(opts, FixedStepOptions):
            opts.poll_settings()  # a bad interval or timeout stops the run before any work
        self.opts = opts
        self.strategy = strategy or tf.distribute.get_strategy()
        self.restore_report: RestoreReport | None = None
        self.eval_results: list[dict[str, Any]] = []
        self._writers: dict[str, Any] = {}
        self._initial_weights_loaded = False
        self._num_padded_lengths = 1  # set by length_buckets (the predictor's XLA choice)

    # ----- construction -----
    def setup(self, model_fn: Callable[[], keras.Model], objective: Objective, metric_key: str,
              num_train_steps: int, num_warmup_steps: int, optimizer_name: str = "adamw",
              keep_checkpoint_max: int = 5, predict_outputs: Sequence[str] = ("logits",),
              model_inputs: Callable[[dict], dict] | None = None) -> None:
        """Builds the Trainer (AdamW/LAMB with the original's schedule), the evaluator and
        the predictor.

        Args:
          num_train_steps / num_warmup_steps: the schedule (used with do_train).
          predict_outputs / model_inputs: what `self.predictor` gathers, and how it feeds
            the model (see `inference.Predictor`).
        """
        opts = self.opts
        steps = num_train_steps if opts.do_train else 0
        loop_config = LoopConfig(
            output_dir=opts.output_dir, num_train_steps=steps,
            train_batch_size=opts.train_batch_size,
            iterations_per_loop=min(opts.iterations_per_loop, opts.save_checkpoints_steps),
            save_checkpoints_steps=opts.save_checkpoints_steps,
            keep_checkpoint_max=keep_checkpoint_max, log_steps=opts.log_steps,
            gradient_accumulation_steps=opts.gradient_accumulation_steps,
            jit_compile=opts.jit_compile, dtype=opts.dtype, clip_norm_mode=opts.clip_norm_mode,
            recompute_grad=opts.recompute_grad)
        optimizer_fn = None
        if opts.do_train:
            def optimizer_fn():
                return create_optimizer(optimizer_name, opts.learning_rate, num_train_steps,
                                        num_warmup_steps)
        init_fn = self.warm_start if opts.init_checkpoint else None
        self.model_fn = model_fn
        self.trainer = Trainer(model_fn, objective, loop_config, optimizer_fn, self.strategy,
                               init_fn=init_fn)
        self.evaluator = CheckpointEvaluator(opts.output_dir, metric_key, self.evaluate_current,
                                             self.trainer.restore_model)
        # The prediction graph (plain or XLA) is chosen at the first prediction, by dtype,
        # CPU and the run's size (`training.hardware.predict_jit_compile`).
        self.predictor = Predictor(self.trainer.model, self.trainer.strategy, predict_outputs,
                                   model_inputs, jit_compile=None, dtype=opts.dtype,
                                   num_lengths=self._num_padded_lengths)

    def warm_start(self, model: keras.Model) -> None:
        """--init_checkpoint (original TF1, HF or ours): every encoder variable must be restored,
        the head may start fresh; the report goes to the run's result too."""
        self.restore_report = warm_start(model, self.opts.init_checkpoint, head_parts(model))
        if getattr(self, "result", None) is not None:
            self.result.restore_report = self.restore_report

    def load_initial_weights(self) -> None:
        """--init_checkpoint (or the export's weights) into the model, once per run."""
        if self._initial_weights_loaded:
            return
        if self.opts.init_checkpoint:
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
            self._num_padded_lengths = 1
            return None
        buckets = LengthBuckets(max_seq_length, min_length=min_length)
        self._num_padded_lengths = len(buckets.lengths)
        logging.info("Length-bucketed batches, padded to one of %s: the train and prediction "
                     "steps are traced once with an open sequence axis (under XLA, compiled "
                     "once per length: at most %d times)", list(buckets.lengths),
                     len(buckets.lengths))
        return buckets

    def float32_model(self) -> keras.Model:
        """The model for a float export (TFLite has no bfloat16 kernels): the trained model,
        or under --dtype=bfloat16/float16 a float32 copy holding its current weights."""
        model = self.trainer.model
        if model.dtype_policy.compute_dtype == "float32":
            return model
        previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy("float32")
        try:
            copy = self.model_fn()
        finally:
            keras.config.set_dtype_policy(previous)
        copy.set_weights(model.get_weights())
        logging.info("Exporting a float32 copy of the %s model", model.dtype_policy.name)
        return copy

    @property
    def has_initial_weights(self) -> bool:
        return bool(self.opts.init_checkpoint or self.opts.albert_hub_module_handle)

    # ----- evaluation -----
    @abc.abstractmethod
    def evaluate_current(self, step: int) -> dict[str, float]:
        """Metrics of the model's current weights on the eval set."""

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
    def train(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset],
              evaluate_on_save: bool = False) -> dict[str, float]:
        """Trains the scheduled steps; with `evaluate_on_save` each saved checkpoint is
        evaluated as it is written."""
        if not self.has_initial_weights:
            logging.warning("No --init_checkpoint or --albert_hub_module_handle: the encoder "
                            "starts from random initialisation (expected only for tests)")
        if evaluate_on_save:
            self.trainer.callbacks.append(EvaluateOnSave(self.evaluator, self.eval_results))
        return self.trainer.train(dataset_fn)

    def evaluate(self) -> None:
        """Evaluates every checkpoint not evaluated yet (or the initial weights if none);
        as a side-car (`FixedStepOptions.follows_training`), each new one until the last
        training step."""
        opts = self.opts
        if isinstance(opts, FixedStepOptions) and opts.follows_training():
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
