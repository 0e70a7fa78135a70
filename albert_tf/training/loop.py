"""The one training / evaluation loop that pretraining, GLUE, SQuAD and RACE run on.

It replaces the original's TPUEstimator (faithfulness §6): strategy scope and distributed input,
a tf.function running `iterations_per_loop` steps per call, gradient accumulation,
cross-replica gradient summation, clipping by global norm 1.0 with the original's norm
(faithfulness §6.3, Q35), optional recomputation of block activations in the backward pass,
dynamic loss scaling for float16, checkpoints with automatic resume, a stop on a non-finite
loss, absl logs + TensorBoard scalars, and `eval_results.txt` written as the original does.
SIGTERM/SIGINT, a checkpoint cut short, a full disk and a lost worker end in a clear state
that the same command resumes from (docs/faults.md).

Tasks supply a model-building function, an `Objective` (loss + metrics), an optimizer
function and dataset functions `fn(tf.distribute.InputContext) -> tf.data.Dataset`
yielding `(features, labels)` batched with `input_context.get_per_replica_batch_size(
global_batch)`. Training datasets must repeat; each replica takes the next batch in turn.
"""

from __future__ import annotations

import datetime
import os
import time
from typing import Any, Callable, Mapping, Sequence

import keras
import tensorflow as tf
from absl import logging

from albert_tf.runtime import hardware
from albert_tf.runtime.execution_rules import use_xla
from albert_tf.models.precision import build_model
from albert_tf.models.recompute import enable_recompute
from albert_tf.training import distribute, preemption
from albert_tf.training.choices import DTYPE_POLICIES
from albert_tf.training.checkpoint_eval import RESULTS_FILE, write_eval_results
from albert_tf.training.checkpointing import TrainingCheckpoint, restore_model
from albert_tf.training.clipping import OccurrenceNormRule
from albert_tf.training.errors import NonFiniteLossError, WorkerLostError
from albert_tf.training import input_options
# LoopConfig and Callback live in loop_config (callers also find them here).
from albert_tf.training.loop_config import Callback, LoopConfig
from albert_tf.training.objective import Objective
from albert_tf.training.optimizers import (LoopOptimizer, learning_rate_at, matches_any,
                                           prepare_for_loop)
from albert_tf.training.steps import CompiledSteps
from albert_tf.training.summaries import write_scalars

_MAX_STEPS = 2**31 - 1


def _format(logs: Mapping[str, float]) -> str:
    return ", ".join(f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in logs.items())


class Trainer(CompiledSteps):
    """Trains and evaluates a Keras model on a tf.distribute strategy.

    Args:
        model_fn: (dtype) → built keras.Model, called under the strategy scope with the
            `DTypePolicy` of `config.dtype` (pass it to the model: `AlbertPretrainer(config,
            dtype=dtype)`); a zero-argument model_fn must build a model of that precision.
        objective: the task's loss and metrics.
        config: LoopConfig.
        optimizer_fn: () → keras optimizer (e.g. `create_optimizer`); None for eval only.
        strategy: default: the current (default) strategy.
        init_fn: (model) → None or a few words on where the weights came from (logged with
            the variable count; default "warm start"): the initial weights (e.g.
            --init_checkpoint), applied only when output_dir holds no checkpoint to resume from.
        callbacks: Callback objects.

    Example:
        >>> trainer = Trainer(lambda: AlbertPretrainer(config), PretrainingObjective(),
        ...                   LoopConfig(output_dir, num_train_steps=1000),
        ...                   optimizer_fn=lambda: create_optimizer("lamb", 1e-3, 1000, 100))
        >>> trainer.train(train_dataset_fn)
        >>> trainer.evaluate(eval_dataset_fn, steps=100)
    """

    def __init__(self, model_fn: Callable[[], keras.Model], objective: Objective,
                 config: LoopConfig, optimizer_fn: Callable[[], Any] | None = None,
                 strategy: tf.distribute.Strategy | None = None,
                 init_fn: Callable[[keras.Model], str | None] | None = None,
                 callbacks: Sequence[Callback] = ()):
        self.strategy = strategy or tf.distribute.get_strategy()
        self.config = config
        self.objective = objective
        self.init_fn = init_fn
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            callback.trainer = self
        self._loop_optimizer: LoopOptimizer | None = None
        config.validate(self.strategy.num_replicas_in_sync)
        self._norm_rule = OccurrenceNormRule(config.clip_norm_mode,
                                             distribute.uses_one_hot_lookups(self.strategy))
        self._per_occurrence: list[bool] = []  # which gradients count per occurrence (traced)
        self.is_chief = distribute.is_chief(self.strategy)
        resolver = getattr(self.strategy, "cluster_resolver", None)
        self.worker_id = int(getattr(resolver, "task_id", 0) or 0)

        hardware.warn_if_slow_dtype(config.dtype, distribute.runs_on_cpu(self.strategy))
        with self.strategy.scope():
            self.model = build_model(model_fn, DTYPE_POLICIES[config.dtype])
            if config.recompute_grad:
                count = enable_recompute(self.model)
                logging.info("recompute_grad: %d transformer stack(s) recompute their "
                             "block activations in the backward pass", count)
            self.trainable_variables = [
                v for v in self.model.trainable_variables
                if not matches_any(v, config.frozen_variable_patterns)]
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            self.train_metrics = objective.create_metrics()
            self.eval_metrics = objective.create_metrics()
            self.optimizer = self._build_optimizer(optimizer_fn) if optimizer_fn else None
        self.checkpoint = (TrainingCheckpoint(
            config.output_dir, self.model, self.optimizer, self.global_step,
            config.keep_checkpoint_max, self.is_chief, self.worker_id)
            if self.optimizer is not None else None)
        self._train_loop_fn = None
        self._eval_loop_fn = None
        self._writers: dict[str, Any] = {}
        self.jit_compile = self._choose_jit_compile()
        fb = self._forward_backward
        self._forward_backward_fn = tf.function(fb, jit_compile=True) if self.jit_compile else fb

    # ----- construction -----
    def _choose_jit_compile(self) -> bool:
        """--jit_compile as given, or (not given) XLA where `execution_rules` measured it the
        faster on this CPU kind and the run repays its compiles; the graph off CPUs (a TPU
        compiles either way; GPUs are not measured)."""
        cfg = self.config
        if cfg.jit_compile is not None:
            return bool(cfg.jit_compile)
        if self.optimizer is None or not distribute.runs_on_cpu(self.strategy):
            return False
        steps = cfg.num_train_steps * cfg.gradient_accumulation_steps
        chosen = use_xla("train", cfg.dtype, steps, cfg.num_input_lengths)
        logging.info("The train step runs %s under --dtype=%s on this %s (%d steps; "
                     "--jit_compile / --nojit_compile choose)",
                     "XLA-compiled" if chosen else "in the tf.function graph", cfg.dtype,
                     hardware.cpu_profile(), cfg.num_train_steps)
        return chosen

    def _build_optimizer(self, optimizer_fn: Callable[[], Any]):
        self._loop_optimizer = prepare_for_loop(
            optimizer_fn(), self.config.dtype, bool(self.config.clip_norm),
            self.strategy.num_replicas_in_sync)
        optimizer = self._loop_optimizer.optimizer
        optimizer.build(self.trainable_variables)
        return optimizer

    # ----- one step, per replica -----
    # ----- public API -----
    @property
    def per_occurrence_variables(self) -> list[str]:
        """Paths of the variables whose gradient the global norm counts per token occurrence
        (Q35; known once a train step has been traced)."""
        return [v.path for v, flagged in zip(self.trainable_variables, self._per_occurrence)
                if flagged]

    def _metric_logs(self, metrics: Mapping[str, keras.metrics.Metric]) -> dict[str, float]:
        return {name: float(metric.result()) for name, metric in metrics.items()}

    def _summary_writer(self, name: str):
        """TensorBoard writer for output_dir/<name> (train, eval); a no-op off the chief."""
        if name not in self._writers:
            self._writers[name] = (
                tf.summary.create_file_writer(os.path.join(self.config.output_dir, name))
                if self.is_chief else tf.summary.create_noop_writer())
        return self._writers[name]

    def _log_variables(self, origin: str) -> None:
        """One INFO line with the count; the original's per-variable listing at --verbosity=1."""
        frozen = len(self.model.trainable_variables) - len(self.trainable_variables)
        logging.info("%d trainable variables (%s)%s; --verbosity=1 lists them",
                     len(self.trainable_variables), origin,
                     f", {frozen} frozen by frozen_variable_patterns" if frozen else "")
        for v in self.trainable_variables:
            logging.debug("  name = %s, shape = %s", v.path, tuple(v.shape))

    def _start(self, dataset_fn) -> tuple[Any, bool]:
        """The input iterator, and the state: resumed from output_dir, else warm-started."""
        tf.io.gfile.makedirs(self.config.output_dir)
        # A plain per-worker iterator (not a distributed one): it is checkpointable, so the
        # input position (shuffle buffers included) is saved and restored exactly.
        # Datasets with stateful ops (e.g. tf.random in a map) still checkpoint, with a TF
        # warning that their random state is not saved (their resume is then approximate):
        # input_options.training_options.
        iterator = iter(dataset_fn(distribute.input_context(self.strategy)).with_options(
            input_options.training_options()))
        self.checkpoint.attach_iterator(iterator)
        restored = self.checkpoint.restore_latest()
        if restored:
            logging.info("Resuming from checkpoint %s at step %d", restored,
                         int(self.global_step.numpy()))
        else:
            origin = "fresh initialisation"
            if self.init_fn is not None:
                with self.strategy.scope():
                    origin = self.init_fn(self.model) or "warm start"
            self._log_variables(origin)
        return iterator, bool(restored)

    def train(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
              ) -> dict[str, float]:
        """Trains to `num_train_steps`, resuming from output_dir's latest checkpoint.

        Returns the logs of the last window. Raises NonFiniteLossError on a NaN/Inf loss;
        TrainingPreempted after SIGTERM/SIGINT, once a checkpoint of the last completed step
        is written (`preemption`); CheckpointWriteError when a checkpoint cannot be written
        (the earlier ones intact); WorkerLostError when a multi-worker peer is lost.
        """
        if self.optimizer is None:
            raise ValueError("Trainer was built without optimizer_fn; it can only evaluate")
        for callback in self.callbacks:  # also those appended after construction
            callback.trainer = self
        iterator, restored = self._start(dataset_fn)
        if self._train_loop_fn is None:
            self._train_loop_fn = self._make_train_loop()
        self._last_saved = int(self.global_step.numpy()) if restored else None
        # SIGTERM/SIGINT: a checkpoint of the last completed step, then TrainingPreempted.
        with preemption.SignalWatch() as watch:
            guard = preemption.guard(self.strategy, watch, self._save_current,
                                     self.config.output_dir)
            try:
                logs = self._train_steps(iterator, guard)
            except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                    tf.errors.AbortedError) as e:
                # Any collective (the step's, a metric's read or reset) fails once a peer
                # is lost. (The guard is not closed: its threads may wait on the lost peer.)
                if not preemption.is_multi_worker(self.strategy):
                    raise
                raise self._worker_lost(e) from None
            guard.close()
            if watch.is_set():  # the signal came during the last steps: all is saved
                step = int(self.global_step.numpy())
                raise preemption.preempted(watch.received, step, self._save_current()[1])
        return logs

    def _save_current(self) -> tuple[int, str]:
        """Saves the current step unless it is saved already: (step, this worker's path)."""
        step = int(self.global_step.numpy())
        if self._last_saved != step:
            self.checkpoint.save(step)
            self._last_saved = step
        return step, self.checkpoint.prefix(step)

    def _worker_lost(self, error: Exception) -> WorkerLostError:
        """A multi-worker peer is lost: one line naming it and the checkpoint to resume from."""
        lost = distribute.lost_peer_description(error, distribute.own_task(self.strategy))
        return WorkerLostError(
            f"training stopped at step {int(self.global_step.numpy())}: {lost}; restart every "
            f"worker with the same command to resume from "
            f"{self.checkpoint.latest() or '(no checkpoint yet)'}")

    def _train_steps(self, iterator, guard) -> dict[str, float]:
        """The loop of `train`: compiled-loop calls, logs and checkpoints to num_train_steps."""
        cfg = self.config
        step = int(self.global_step.numpy())
        total = cfg.num_train_steps
        writer = self._summary_writer("train")
        logs: dict[str, float] = {}
        window_loss, window_steps, window_time = 0.0, 0, 0.0
        window_norm, window_norm_steps = 0.0, 0.0
        norm_logged = False
        while step < total:
            def until(every: int) -> int:
                return every - step % every
            n = min(cfg.iterations_per_loop, total - step, until(cfg.log_steps),
                    until(cfg.save_checkpoints_steps))
            start = time.perf_counter()
            loss_sum, steps, last_loss, norm_sum, norm_steps = guard.run(
                self._train_loop_fn, iterator, tf.constant(n, tf.int64))
            steps = int(steps)
            window_time += time.perf_counter() - start
            step = int(self.global_step.numpy())
            if steps < n:
                raise NonFiniteLossError(
                    f"non-finite loss ({float(last_loss)}) at step {step}; training stopped. "
                    f"Checkpoints are untouched: the last is "
                    f"{self.checkpoint.latest() or '(none)'}; restart to resume from it.")
            window_loss += float(loss_sum)
            window_steps += steps
            window_norm += float(norm_sum)
            window_norm_steps += float(norm_steps)
            if not norm_logged:
                logging.info("Gradient clipping: global norm %s (clip_norm_mode=%s); per token "
                             "occurrence: %s", cfg.clip_norm, cfg.clip_norm_mode,
                             ", ".join(self.per_occurrence_variables) or "none")
                norm_logged = True
            if step % cfg.log_steps == 0 or step == total:
                norm = window_norm / window_norm_steps if window_norm_steps else float("nan")
                logs = self._window_logs(step, window_loss, window_steps, window_time, norm)
                self._write_logs(writer, step, logs)
                for metric in self.train_metrics.values():
                    metric.reset_state()
                window_loss, window_steps, window_time = 0.0, 0, 0.0
                window_norm, window_norm_steps = 0.0, 0.0
            if step % cfg.save_checkpoints_steps == 0 or step == total:
                path = self.checkpoint.save(step)
                self._last_saved = step
                if path:
                    logging.info("Saved checkpoint for step %d: %s", step, path)
                for callback in self.callbacks:
                    callback.on_checkpoint(step, path)
        if self._last_saved != step:  # e.g. nothing to train: make sure the final state is saved
            self.checkpoint.save(step)
            self._last_saved = step
        writer.flush()
        return logs

    def _window_logs(self, step: int, loss: float, steps: int, seconds: float,
                     gradient_norm: float) -> dict[str, float]:
        """The logged scalars; `gradient_norm` is the window's mean global norm before
        clipping (with --clip_norm_mode's norm)."""
        cfg = self.config
        rate = steps / seconds if seconds > 0 else 0.0
        logs = {"loss": loss / max(steps, 1), **self._metric_logs(self.train_metrics),
                "gradient_norm": gradient_norm,
                "learning_rate": learning_rate_at(self.optimizer, step - 1 if step else 0),
                "examples_per_second": rate * cfg.train_batch_size,
                "steps_per_second": rate}
        eta = datetime.timedelta(seconds=int((cfg.num_train_steps - step) / rate)) if rate else "?"
        logging.info("step %d/%d: %s, ETA %s", step, cfg.num_train_steps, _format(logs), eta)
        return logs

    def _write_logs(self, writer, step: int, logs: Mapping[str, float]) -> None:
        write_scalars(writer, step, logs)
        for callback in self.callbacks:
            callback.on_log(step, logs)

    def restore_model(self, path: str | None = None) -> str:
        """Loads model weights from `path` or the latest checkpoint of output_dir (for eval)."""
        return restore_model(self.model, self.global_step, self.config.output_dir, path)

    def evaluate(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset],
                 steps: int | None = None, results_file: str | None = RESULTS_FILE
                 ) -> dict[str, float]:
        """Metrics over `steps` batches (None: until the dataset ends), plus `loss` (mean over
        batches of the batch loss) and `global_step`; written to output_dir/results_file."""
        dataset = self.strategy.distribute_datasets_from_function(
            lambda context: input_options.without_autotune(dataset_fn(context)))  # a fresh pass
        if self._eval_loop_fn is None:
            self._eval_loop_fn = self._make_eval_loop()
        for metric in self.eval_metrics.values():
            metric.reset_state()
        loss_sum, num_steps = self._eval_loop_fn(
            iter(dataset), tf.constant(steps or _MAX_STEPS, tf.int64))
        num_steps = int(num_steps)
        results: dict[str, Any] = self._metric_logs(self.eval_metrics)
        results["loss"] = float(loss_sum) / num_steps if num_steps else float("nan")
        results["global_step"] = int(self.global_step.numpy())
        logging.info("***** Eval results (%d batches) *****", num_steps)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if self.is_chief:
            tf.io.gfile.makedirs(self.config.output_dir)
            if results_file:
                write_eval_results(os.path.join(self.config.output_dir, results_file), results)
            write_scalars(self._summary_writer("eval"), results["global_step"],
                          {k: v for k, v in results.items() if k != "global_step"})
        return results
