"""Model outputs for every example of a finite dataset, in order, on any strategy.

The training loop's `Trainer.evaluate` streams Keras metrics; GLUE and RACE also need the
outputs themselves (Spearman ranks, per-level accuracy, prediction files), so this runs the
model once over the data and gathers the logits and labels to the host. It is
task-independent and a candidate for `Trainer.predict`.

Example:
    >>> predictor = Predictor(trainer.model, trainer.strategy)
    >>> outputs = predictor.run(eval_dataset)   # {"logits": [N, C], "label_ids": [N], ...}
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf


def _to_numpy(strategy: tf.distribute.Strategy, value: Any) -> np.ndarray:
    """Per-replica values concatenated in replica order (= the global batch order)."""
    parts = strategy.experimental_local_results(value)
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


class Predictor:
    """Runs `model(features, training=False)` over `(features, labels)` batches.

    The dataset is batched with the global batch size; the strategy splits each batch
    across replicas in order, so concatenating replica results keeps example order. The
    traced step is reused across calls (e.g. one eval per checkpoint).
    """

    def __init__(self, model: keras.Model, strategy: tf.distribute.Strategy | None = None,
                 output_key: str = "logits"):
        self.model = model
        self.strategy = strategy or tf.distribute.get_strategy()
        self.output_key = output_key

        self._step = None  # traced on first use, with the batch dimension left open

    def _trace(self, element_spec) -> None:
        def replica_step(batch):
            features, labels = batch
            outputs = self.model(features, training=False)
            return tf.cast(outputs[self.output_key], tf.float32), labels

        # One trace for every batch size (the last, partial batch included).
        @tf.function(input_signature=[element_spec])
        def step(batch):
            return self.strategy.run(replica_step, args=(batch,))

        self._step = step

    def run(self, dataset: tf.data.Dataset) -> dict[str, np.ndarray]:
        """{output_key: [N, …], and every labels key: [N, …]} over the whole dataset."""
        distributed = self.strategy.experimental_distribute_dataset(dataset)
        if self._step is None:
            self._trace(distributed.element_spec)
        outputs: list[np.ndarray] = []
        labels: dict[str, list[np.ndarray]] = {}
        for batch in distributed:
            logits, batch_labels = self._step(batch)
            outputs.append(_to_numpy(self.strategy, logits))
            for key, value in batch_labels.items():
                labels.setdefault(key, []).append(_to_numpy(self.strategy, value))
        if not outputs:
            raise ValueError("the dataset is empty")
        result = {self.output_key: np.concatenate(outputs, axis=0)}
        result.update({key: np.concatenate(parts, axis=0) for key, parts in labels.items()})
        return result
