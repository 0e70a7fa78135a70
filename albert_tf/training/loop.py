"""The one training / evaluation loop that pretraining, GLUE, SQuAD and RACE run on.

It replaces the original's TPUEstimator (spec §6): strategy scope and distributed input,
a tf.function running `iterations_per_loop` steps per call, gradient accumulation,
cross-replica gradient summation, clipping by global norm 1.0 (spec §6.3), dynamic loss
scaling for float16, checkpoints with automatic resume, a stop on a non-finite loss,
absl logs + TensorBoard scalars, and `eval_results.txt` written as the original does.

Tasks supply a model-building function, an `Objective` (loss + metrics), an optimizer
function and dataset functions `fn(tf.distribute.InputContext) -> tf.data.Dataset`
yielding `(features, labels)` batched with `input_context.get_per_replica_batch_size(
global_batch)`. Training datasets must repeat; each replica takes the next batch in turn.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from typing import Any, Callable, Mapping, Sequence

import keras
import tensorflow as tf
from absl import logging

from albert_tf.training.choices import DTYPE_POLICIES
from albert_tf.training.checkpointing import TrainingCheckpoint, keyed_variables
from albert_tf.training.distribute import is_chief
from albert_tf.training.errors import NonFiniteLossError
from albert_tf.training.objective import Objective
from albert_tf.training.optimizers import matches_any
from albert_tf.training.summaries import write_scalars

EVAL_RESULTS_FILE = "eval_results.txt"
_MAX_STEPS = 2**31 - 1


@dataclasses.dataclass
class LoopConfig:
    """Settings of a training run (each run_* script fills them from its flags, spec §6.1).

    `train_batch_size` is the global batch of one optimizer step; with
    `gradient_accumulation_steps` = k it is computed as k micro-batches per replica.
    """

    output_dir: str
    num_train_steps: int = 0
    train_batch_size: int = 32
    iterations_per_loop: int = 1000
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    log_steps: int = 100
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    dtype: str = "float32"
    clip_norm: float | None = 1.0
    # Variable-path regexes left untrained (the original's `excluded_tvars`, Q16 fixed).
    frozen_variable_patterns: Sequence[str] = ()

    def validate(self, num_replicas: int = 1) -> None:
        """Raises ValueError naming the first inconsistent setting."""
        if self.dtype not in DTYPE_POLICIES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_POLICIES)}, got {self.dtype!r}")
        for name in ("iterations_per_loop", "save_checkpoints_steps", "keep_checkpoint_max",
                     "log_steps", "gradient_accumulation_steps", "train_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        per_step = num_replicas * self.gradient_accumulation_steps
        if self.train_batch_size % per_step:
            raise ValueError(
                f"train_batch_size ({self.train_batch_size}) must be divisible by replicas × "
                f"gradient_accumulation_steps ({num_replicas} × {self.gradient_accumulation_steps})")


class Callback:
    """Hooks called on every worker; override what you need. `self.trainer` is set by the
    Trainer the callback is given to."""

    trainer: "Trainer | None" = None

    def on_log(self, step: int, logs: Mapping[str, float]) -> None:
        """After each logging window."""

    def on_checkpoint(self, step: int, path: str | None) -> None:
        """After a checkpoint is written (path is None on non-chief workers)."""


def write_eval_results(path: str, results: Mapping[str, Any]) -> None:
    """`key = value` lines, sorted by key, as the original; written atomically."""
    tmp = f"{path}.tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
        for key in sorted(results):
            f.write(f"{key} = {results[key]}\n")
    tf.io.gfile.rename(tmp, path, overwrite=True)


def _split(structure: Any, index: tf.Tensor, parts: int) -> Any:
    """Micro-batch `index` of `parts` equal slices along the batch axis."""
    def take(x):
        size = tf.shape(x)[0] // parts
        return x[index * size:(index + 1) * size]
    return tf.nest.map_structure(take, structure)


def _format(logs: Mapping[str, float]) -> str:
    return ", ".join(f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in logs.items())


class Trainer:
    """Trains and evaluates a Keras model on a tf.distribute strategy.

    Args:
        model_fn: () → built keras.Model; called under the strategy scope and dtype policy.
        objective: the task's loss and metrics.
        config: LoopConfig.
        optimizer_fn: () → keras optimizer (e.g. `create_optimizer`); None for eval only.
        strategy: default: the current (default) strategy.
        init_fn: (model) → None, a warm start (e.g. --init_checkpoint) applied only when
            output_dir holds no checkpoint to resume from.
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
                 init_fn: Callable[[keras.Model], None] | None = None,
                 callbacks: Sequence[Callback] = ()):
        self.strategy = strategy or tf.distribute.get_strategy()
        self.config = config
        self.objective = objective
        self.init_fn = init_fn
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            callback.trainer = self
        self._pre_divide = 1.0  # set by _build_optimizer
        self._loss_scaled = False
        config.validate(self.strategy.num_replicas_in_sync)
        self.is_chief = is_chief(self.strategy)
        resolver = getattr(self.strategy, "cluster_resolver", None)
        self.worker_id = int(getattr(resolver, "task_id", 0) or 0)

        previous_policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy(DTYPE_POLICIES[config.dtype])
        try:
            with self.strategy.scope():
                self.model = model_fn()
                self.trainable_variables = [
                    v for v in self.model.trainable_variables
                    if not matches_any(v, config.frozen_variable_patterns)]
                self.global_step = tf.Variable(
                    0, dtype=tf.int64, trainable=False, name="global_step",
                    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
                self.train_metrics = objective.create_metrics()
                self.eval_metrics = objective.create_metrics()
                self.optimizer = self._build_optimizer(optimizer_fn) if optimizer_fn else None
        finally:
            keras.config.set_dtype_policy(previous_policy)
        self.checkpoint = (TrainingCheckpoint(
            config.output_dir, self.model, self.optimizer, self.global_step,
            config.keep_checkpoint_max, self.is_chief, self.worker_id)
            if self.optimizer is not None else None)
        self._train_loop_fn = None
        self._eval_loop_fn = None
        self._writers: dict[str, Any] = {}
        fb = self._forward_backward
        self._forward_backward_fn = tf.function(fb, jit_compile=True) if config.jit_compile else fb

    # ----- construction -----
    def _build_optimizer(self, optimizer_fn: Callable[[], Any]):
        optimizer = optimizer_fn()
        inner = optimizer
        if self.config.dtype == "float16" and not isinstance(
                optimizer, keras.optimizers.LossScaleOptimizer):
            optimizer = keras.optimizers.LossScaleOptimizer(inner)  # dynamic loss scaling
        elif isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            inner = optimizer.inner_optimizer
        if self.config.clip_norm:
            if inner.clipnorm or inner.clipvalue or (
                    inner.global_clipnorm and inner.global_clipnorm != self.config.clip_norm):
                raise ValueError("the optimizer already clips gradients; the loop owns clipping "
                                 "(LoopConfig.clip_norm)")
            # Applied by the optimizer after loss-scale unscaling, on the summed gradient.
            inner.global_clipnorm = self.config.clip_norm
        # Our optimizers take the loop's cross-replica sum as is; others would sum again,
        # so they get the sum divided by the replica count.
        self._pre_divide = 1.0
        if hasattr(inner, "aggregate_gradients"):
            inner.aggregate_gradients = False
        else:
            self._pre_divide = 1.0 / self.strategy.num_replicas_in_sync
        self._loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        optimizer.build(self.trainable_variables)
        return optimizer

    # ----- one step, per replica -----
    def _forward_backward(self, features, labels, normalizers):
        """Loss share and gradients of one micro-batch (jit-compiled with --jit_compile)."""
        with tf.GradientTape() as tape:
            outputs = self.model(features, training=True)
            loss = self.objective.loss(labels, outputs, normalizers)
            scaled = self.optimizer.scale_loss(loss) if self._loss_scaled else loss
        grads = tape.gradient(scaled, self.trainable_variables)
        # Dense gradients (embedding lookups give IndexedSlices): the original's optimizers
        # update every row's moments, and dense tensors sum and all-reduce simply.
        grads = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        return loss, grads, outputs

    def _replica_train_step(self, batch):
        features, labels = batch
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.objective.normalizers(labels))
        k = self.config.gradient_accumulation_steps
        if k == 1:
            loss, grads, outputs = self._forward_backward_fn(features, labels, normalizers)
            self.objective.update_metrics(self.train_metrics, labels, outputs)
        else:
            first_f, first_l = _split(features, 0, k), _split(labels, 0, k)
            loss, grads, outputs = self._forward_backward_fn(first_f, first_l, normalizers)
            self.objective.update_metrics(self.train_metrics, first_l, outputs)
            present = [i for i, g in enumerate(grads) if g is not None]
            accumulated = [grads[i] for i in present]
            for index in tf.range(1, k):
                micro_f, micro_l = _split(features, index, k), _split(labels, index, k)
                micro_loss, micro_grads, micro_outputs = self._forward_backward_fn(
                    micro_f, micro_l, normalizers)
                self.objective.update_metrics(self.train_metrics, micro_l, micro_outputs)
                loss += micro_loss
                accumulated = [a + micro_grads[i] for a, i in zip(accumulated, present)]
            grads = [None] * len(grads)
            for a, i in zip(accumulated, present):
                grads[i] = a
        pairs = [(g, v) for g, v in zip(grads, self.trainable_variables) if g is not None]
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [g for g, _ in pairs])
        if self._pre_divide != 1.0:
            summed = [g * self._pre_divide for g in summed]
        self.optimizer.apply(summed, [v for _, v in pairs])
        return loss

    def _replica_eval_step(self, batch):
        features, labels = batch
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.objective.normalizers(labels))
        outputs = self.model(features, training=False)
        loss = self.objective.loss(labels, outputs, normalizers)
        self.objective.update_metrics(self.eval_metrics, labels, outputs)
        return loss

    # ----- in-graph loops -----
    def _make_train_loop(self):
        strategy = self.strategy

        @tf.function
        def train_loop(iterator, num_steps):
            loss_sum = tf.constant(0.0)
            last_loss = tf.constant(0.0)
            steps = tf.constant(0, tf.int64)
            for _ in tf.range(num_steps):
                # Each local replica takes the next per-replica batch, in replica order.
                batch = strategy.experimental_distribute_values_from_function(
                    lambda _: next(iterator))
                per_replica = strategy.run(self._replica_train_step, args=(batch,))
                last_loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                if not tf.math.is_finite(last_loss):
                    break  # global_step stays at the failing step; the host raises
                self.global_step.assign_add(1)
                loss_sum += last_loss
                steps += 1
            return loss_sum, steps, last_loss

        return train_loop

    def _make_eval_loop(self):
        strategy = self.strategy

        @tf.function
        def eval_loop(iterator, num_steps):
            loss_sum = tf.constant(0.0)
            steps = tf.constant(0, tf.int64)
            for _ in tf.range(num_steps):
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    break
                per_replica = strategy.run(self._replica_eval_step, args=(optional.get_value(),))
                loss_sum += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                steps += 1
            return loss_sum, steps

        return eval_loop

    # ----- public API -----
    def input_context(self) -> tf.distribute.InputContext:
        """This worker's InputContext: one input pipeline per worker, replicas in sync."""
        num_workers, index = 1, 0
        resolver = getattr(self.strategy, "cluster_resolver", None)
        spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
        if spec.get("worker") or spec.get("chief"):
            chiefs = len(spec.get("chief", []))
            num_workers = chiefs + len(spec.get("worker", []))
            index = 0 if resolver.task_type == "chief" else chiefs + int(resolver.task_id or 0)
        return tf.distribute.InputContext(num_workers, index, self.strategy.num_replicas_in_sync)

    def learning_rate(self, step: int | None = None) -> float:
        """The optimizer's learning rate at `step` (default: the current global step)."""
        inner = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        schedule = getattr(inner, "_learning_rate", None)  # Keras keeps the schedule here
        step = int(self.global_step.numpy()) if step is None else step
        if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
            return float(schedule(step))
        return float(inner.learning_rate)

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
        logging.info("**** Trainable variables (%s) ****", origin)
        for v in self.trainable_variables:
            logging.info("  name = %s, shape = %s", v.path, tuple(v.shape))
        frozen = len(self.model.trainable_variables) - len(self.trainable_variables)
        if frozen:
            logging.info("  (%d variable(s) frozen by frozen_variable_patterns)", frozen)

    def _start(self, dataset_fn) -> tuple[Any, bool]:
        """The input iterator, and the state: resumed from output_dir, else warm-started."""
        tf.io.gfile.makedirs(self.config.output_dir)
        # A plain per-worker iterator (not a distributed one): it is checkpointable, so the
        # input position (shuffle buffers included) is saved and restored exactly.
        # Datasets with stateful ops (e.g. tf.random in a map) still checkpoint, with a TF
        # warning that their random state is not saved (their resume is then approximate).
        options = tf.data.Options()
        options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.WARN
        iterator = iter(dataset_fn(self.input_context()).with_options(options))
        self.checkpoint.attach_iterator(iterator)
        restored = self.checkpoint.restore_latest()
        if restored:
            logging.info("Resuming from checkpoint %s at step %d", restored,
                         int(self.global_step.numpy()))
        else:
            if self.init_fn is not None:
                with self.strategy.scope():
                    self.init_fn(self.model)
            self._log_variables("warm start" if self.init_fn else "fresh initialisation")
        return iterator, bool(restored)

    def train(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
              ) -> dict[str, float]:
        """Trains to `num_train_steps`, resuming from output_dir's latest checkpoint.

        Returns the logs of the last window. Raises NonFiniteLossError on a NaN/Inf loss.
        """
        if self.optimizer is None:
            raise ValueError("Trainer was built without optimizer_fn; it can only evaluate")
        for callback in self.callbacks:  # also those appended after construction
            callback.trainer = self
        iterator, restored = self._start(dataset_fn)
        if self._train_loop_fn is None:
            self._train_loop_fn = self._make_train_loop()
        cfg = self.config
        step = int(self.global_step.numpy())
        total = cfg.num_train_steps
        writer = self._summary_writer("train")
        logs: dict[str, float] = {}
        window_loss, window_steps, window_time = 0.0, 0, 0.0
        last_saved = step if restored else None
        while step < total:
            def until(every: int) -> int:
                return every - step % every
            n = min(cfg.iterations_per_loop, total - step, until(cfg.log_steps),
                    until(cfg.save_checkpoints_steps))
            start = time.perf_counter()
            loss_sum, steps, last_loss = self._train_loop_fn(iterator, tf.constant(n, tf.int64))
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
            if step % cfg.log_steps == 0 or step == total:
                logs = self._window_logs(step, window_loss, window_steps, window_time)
                self._write_logs(writer, step, logs)
                for metric in self.train_metrics.values():
                    metric.reset_state()
                window_loss, window_steps, window_time = 0.0, 0, 0.0
            if step % cfg.save_checkpoints_steps == 0 or step == total:
                path = self.checkpoint.save(step)
                last_saved = step
                if path:
                    logging.info("Saved checkpoint for step %d: %s", step, path)
                for callback in self.callbacks:
                    callback.on_checkpoint(step, path)
        if last_saved != step:  # e.g. nothing to train: make sure the final state is saved
            self.checkpoint.save(step)
        writer.flush()
        return logs

    def _window_logs(self, step: int, loss: float, steps: int, seconds: float) -> dict[str, float]:
        cfg = self.config
        rate = steps / seconds if seconds > 0 else 0.0
        logs = {"loss": loss / max(steps, 1), **self._metric_logs(self.train_metrics),
                "learning_rate": self.learning_rate(step - 1 if step else 0),
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
        path = path or tf.train.latest_checkpoint(self.config.output_dir)
        if not path:
            raise FileNotFoundError(f"no checkpoint found in {self.config.output_dir}")
        checkpoint = tf.train.Checkpoint(model=keyed_variables(self.model.variables),
                                         global_step=self.global_step)
        checkpoint.read(path).expect_partial()
        logging.info("Restored model weights from %s (step %d)", path, int(self.global_step.numpy()))
        return path

    def evaluate(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset],
                 steps: int | None = None, results_file: str | None = EVAL_RESULTS_FILE
                 ) -> dict[str, float]:
        """Metrics over `steps` batches (None: until the dataset ends), plus `loss` (mean over
        batches of the batch loss) and `global_step`; written to output_dir/results_file."""
        dataset = self.strategy.distribute_datasets_from_function(dataset_fn)
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
