"""A model's outputs for every example of a finite dataset, in order, on any strategy.

The training loop's `Trainer.evaluate` streams Keras metrics; fine-tuning evaluation and
prediction need the outputs themselves (Spearman ranks, per-level accuracy, SQuAD's n-best
search, prediction files), so `Predictor` runs the model once over the data and gathers the
chosen outputs to the host, with the dataset's passthrough keys (labels, `unique_ids`) beside
them. It is the one prediction path of GLUE, RACE and SQuAD.

How: each host batch (any size, the last partial one included) is padded with zero rows to
a multiple of the local replica count, split into equal consecutive slices — replica i takes
the i-th — and run under `strategy.run`; the replicas' results are concatenated in replica
order and the padding dropped, so row order is the input order. The step is traced once,
with the batch and sequence axes left open, so batches of different padded lengths (length
buckets) reuse it; with `jit_compile` the model call is XLA-compiled (once per padded length).
`jit_compile=None` decides at the first run from the dtype, the CPU and the number of batches
and padded lengths (`execution_rules.use_xla`), as the fine-tuning runs do; both are
counted by a pass over the dataset that runs no model (`batch_lengths`), as bucketed batches
are not known before.
With `freeze_weights` each run reads the weights once, as constants of its graph
(`models.frozen_weights`: oneDNN then keeps them packed, and on AMX runs bf16 matmuls on its
brgemm kernels), and traces the step anew, so a run after more training predicts with the new
weights; None decides at the first run, on one CPU device, by `execution_rules.
freeze_for_prediction` (the dtype, the CPU and the number of batches, which must repay the
freezing of every run).
Each run iterates its dataset with tf.data's autotuning off
(`training.input_options.without_autotune`: with it on, about half the runs were 1.45× slower
throughout on a 2-core Xeon).
On several workers each worker predicts the whole dataset it is given.
Length-bucketed datasets (`bucketing.LengthBuckets.eval_batches`) reorder the examples and
tag each with its file position; the results are put back in file order.

Example:
    >>> predictor = Predictor(trainer.model, trainer.strategy, outputs=("logits",))
    >>> result = predictor.run(eval_dataset, num_examples=len(examples))
    >>> result["logits"].shape, result["label_ids"].shape   # ([N, C], [N])
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Callable, Mapping, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.finetuning.bucketing import restore_order
from albert_tf.runtime.execution_rules import freeze_for_prediction, use_xla
from albert_tf.training.distribute import runs_on_cpu
from albert_tf.models.frozen_weights import frozen_function
from albert_tf.training.input_options import without_autotune


def open_signature(spec: Any) -> Any:
    """`spec` with the batch axis and, from rank 2, the last (sequence) axis unknown."""
    def relax(tensor_spec: tf.TensorSpec) -> tf.TensorSpec:
        shape = tensor_spec.shape.as_list()
        if shape:
            shape[0] = None
        if len(shape) >= 2:
            shape[-1] = None
        return tf.TensorSpec(shape, tensor_spec.dtype, tensor_spec.name)

    return tf.nest.map_structure(relax, spec)


def _local_replicas(strategy: tf.distribute.Strategy) -> int:
    """Replicas on this worker (the default strategy has one and no device list)."""
    try:
        return len(strategy.extended.worker_devices)
    except RuntimeError:
        return strategy.num_replicas_in_sync


def _one_cpu_device(strategy: tf.distribute.Strategy) -> bool:
    """True for the default strategy and a one-device strategy, on a CPU."""
    single = (isinstance(strategy, tf.distribute.OneDeviceStrategy)
              or strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy())
    return single and runs_on_cpu(strategy)


def batch_lengths(dataset: tf.data.Dataset) -> dict[int | None, int]:
    """{padded sequence length: number of batches} of a finite dataset of `features` or
    `(features, passthrough)` batches, read from the first feature's last axis (None for
    features without one). A pass over the data that runs no model: length-bucketed
    batches (one partial batch per bucket) are not known before."""
    def shape_of(*element):
        return tf.shape(tf.nest.flatten(element[0])[0])

    counts: dict[int | None, int] = {}
    for shape in dataset.map(shape_of).as_numpy_iterator():
        length = int(shape[-1]) if len(shape) >= 2 else None
        counts[length] = counts.get(length, 0) + 1
    return counts


class Predictor:
    """Runs `model(features, training=False)` over `(features, passthrough)` batches.

    Args:
      model: a Keras model returning a dict of outputs.
      strategy: where to run (default: the current strategy).
      outputs: the model outputs to gather; floating ones come back as float32.
      model_inputs: features → the model's input dict, applied on the replica (e.g. SQuAD
        v2 adds `start_positions=None`); default: the features as they are.
      log_every: log progress (examples/s, ETA) every this many batches.
      jit_compile: XLA-compile the model call (the outputs are the same within float
        round-off; which graph is faster depends on the dtype and the CPU); None: decided
        at the first `run` by `execution_rules.use_xla("predict", dtype, batches, lengths)` on
        CPUs (the graph on GPUs and TPUs, as the Trainer), from
        the batches and padded lengths that run's dataset has (`batch_lengths`).
      dtype: the model's --dtype, for `jit_compile=None`.
      freeze_weights: run on the weights as graph constants, read at the start of each run;
        None: decided at the first `run`, on one CPU device (default and one-device
        strategies) by `execution_rules.freeze_for_prediction`, never with XLA.
    """

    def __init__(self, model: keras.Model, strategy: tf.distribute.Strategy | None = None,
                 outputs: Sequence[str] = ("logits",),
                 model_inputs: Callable[[dict], dict] | None = None, log_every: int = 100,
                 jit_compile: bool | None = False, dtype: str = "float32",
                 freeze_weights: bool | None = None):
        self.model = model
        self.strategy = strategy or tf.distribute.get_strategy()
        self.outputs = tuple(outputs)
        known = getattr(model, "output", None)  # a functional model's output structure
        if isinstance(known, Mapping) and set(self.outputs) - set(known):
            raise KeyError(f"the model has no output(s) "
                           f"{', '.join(sorted(set(self.outputs) - set(known)))} "
                           f"(it has {', '.join(sorted(known))})")
        self.model_inputs = model_inputs
        self.log_every = log_every
        self.num_traces = 0
        self.jit_compile = jit_compile
        self.dtype = dtype
        self.freeze_weights = freeze_weights
        self._step = None  # traced on first use (on every run with frozen weights)

    def _replica_step(self, features: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        inputs = self.model_inputs(dict(features)) if self.model_inputs else features
        outputs = self.model(inputs, training=False)
        return {name: tf.cast(outputs[name], tf.float32) if outputs[name].dtype.is_floating
                else outputs[name] for name in self.outputs}

    def _trace(self, dataset: tf.data.Dataset, feature_spec: Any) -> None:
        strategy = self.strategy
        replicas = _local_replicas(strategy)
        if self.jit_compile is None or self.freeze_weights is None:
            lengths = batch_lengths(dataset)
            batches = sum(lengths.values())
        if self.jit_compile is None:
            # The table is measured on CPUs; off them the graph, as the Trainer's choice.
            self.jit_compile = runs_on_cpu(strategy) and use_xla(
                "predict", self.dtype, batches, len(lengths))
            logging.info("Prediction runs the model %s under --dtype=%s (%d batches, %d padded "
                         "length(s); benchmarks/RESULTS.md)",
                         "XLA-compiled" if self.jit_compile else "in the tf.function graph",
                         self.dtype, batches, len(lengths))
        if self.freeze_weights is None:
            self.freeze_weights = (not self.jit_compile and _one_cpu_device(strategy)
                                   and freeze_for_prediction(self.dtype, batches))
            if self.freeze_weights:
                logging.info("Prediction reads the weights once per run, as graph constants "
                             "(faster here for %d batches under --dtype=%s)", batches, self.dtype)
        replica_fn = self._replica_step
        if self.freeze_weights:
            replica_fn = frozen_function(tf.function(
                replica_fn, input_signature=[open_signature(feature_spec)]))
        if self.jit_compile:
            replica_fn = tf.function(replica_fn, jit_compile=True)

        @tf.function(input_signature=[open_signature(feature_spec)])
        def step(features):
            self.num_traces += 1  # Python side effect: counts traces, not calls
            logging.info("Tracing the prediction step (batch and sequence axes open: one "
                         "trace for every batch size and padded length%s)",
                         "; XLA compiles once per padded length" if self.jit_compile else "")
            rows = tf.shape(tf.nest.flatten(features)[0])[0]
            padding = (-rows) % replicas
            padded = tf.nest.map_structure(
                lambda x: tf.pad(x, [[0, padding]] + [[0, 0]] * (x.shape.rank - 1)), features)
            share = (rows + padding) // replicas

            def replica_slice(context: tf.distribute.experimental.ValueContext):
                index = context.replica_id_in_sync_group % replicas
                return tf.nest.map_structure(lambda x: x[index * share:(index + 1) * share],
                                             padded)

            sliced = strategy.experimental_distribute_values_from_function(replica_slice)
            return strategy.run(replica_fn, args=(sliced,))

        self._step = step

    def _gather(self, per_replica: Mapping[str, Any], rows: int) -> dict[str, np.ndarray]:
        gathered = {}
        for name, value in per_replica.items():
            parts = self.strategy.experimental_local_results(value)
            gathered[name] = np.concatenate([np.asarray(p) for p in parts], axis=0)[:rows]
        return gathered

    def run(self, dataset: tf.data.Dataset, num_examples: int | None = None,
            description: str = "Predicting") -> dict[str, np.ndarray]:
        """{each output: [N, …]} plus every passthrough key: [N, …], in dataset order (file
        order for length-bucketed datasets).

        `dataset` yields batches of `(features, passthrough)` (or features alone);
        `num_examples`, when known, gives the progress log an ETA.
        """
        spec = dataset.element_spec
        feature_spec = spec[0] if isinstance(spec, tuple) else spec
        collected: dict[str, list[np.ndarray]] = {}
        padded_lengths: dict[int, int] = {}  # padded sequence length → batches
        if self._step is None or self.freeze_weights:
            self._trace(dataset, feature_spec)
        done, batches, start = 0, 0, time.perf_counter()
        for batch in without_autotune(dataset):
            features, passthrough = batch if isinstance(batch, tuple) else (batch, {})
            first = tf.nest.flatten(features)[0]
            rows = int(tf.shape(first)[0])
            if first.shape.rank >= 2:
                length = int(tf.shape(first)[-1])
                padded_lengths[length] = padded_lengths.get(length, 0) + 1
            results = self._gather(self._step(features), rows)
            for key, value in passthrough.items():
                if key in results:
                    raise ValueError(f"passthrough key {key!r} is also a model output")
                results[key] = np.asarray(value)
            for key, value in results.items():
                collected.setdefault(key, []).append(value)
            done, batches = done + rows, batches + 1
            if batches % self.log_every == 0:
                self._log_progress(description, done, num_examples, time.perf_counter() - start)
        if not collected:
            raise ValueError("the dataset is empty")
        seconds = time.perf_counter() - start
        logging.info("%s: %d examples in %.1f s (%.1f examples/s)", description, done, seconds,
                     done / seconds if seconds > 0 else 0.0)
        if len(padded_lengths) > 1:
            logging.info("%s: batches per padded length: %s", description,
                         ", ".join(f"{k}: {v}" for k, v in sorted(padded_lengths.items())))
        return restore_order({key: np.concatenate(parts, axis=0)
                              for key, parts in collected.items()})

    @staticmethod
    def _log_progress(description: str, done: int, total: int | None, seconds: float) -> None:
        rate = done / seconds if seconds > 0 else 0.0
        if total and rate:
            eta = datetime.timedelta(seconds=int(max(total - done, 0) / rate))
            logging.info("%s: %d/%d examples, %.1f examples/s, ETA %s", description, done,
                         total, rate, eta)
        else:
            logging.info("%s: %d examples, %.1f examples/s", description, done, rate)
