"""Held-out evaluation of a pretrained model: masked LM, its own sentence head, a linear probe.

Table 5 evaluates every model on both sentence tasks. A model trained with a sentence task
is scored with its own 2-way head (what the paper reports), on held-out SOP and NSP pairs.
A model trained without one (task "none") has no trained head, so every model is also
scored by a linear probe: logistic regression on the frozen pooled [CLS] output, fitted on
training-document pairs of the task and scored on the held-out pairs.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.data import pretraining_dataset
from albert_tf.models import INPUT_NAMES, AlbertPretrainer
from albert_tf.checkpoints import warm_start
from albert_tf.pretraining.records import to_model_inputs


def load_pretrainer(config: AlbertConfig, checkpoint_dir: str) -> AlbertPretrainer:
    """An AlbertPretrainer with the latest weights of a run_pretraining output_dir."""
    path = tf.train.latest_checkpoint(checkpoint_dir)
    if path is None:
        raise FileNotFoundError(f"no checkpoint in {checkpoint_dir}")
    model = AlbertPretrainer(config)
    warm_start(model, path)  # every variable: the run saved them all
    return model


class OutputReader:
    """Reads a pretrained model's outputs over record files: masked-LM hits and weights,
    sentence-head predictions, pooled outputs and labels, as NumPy arrays. One compiled
    step serves every file (shapes relaxed, so a short last batch does not retrace)."""

    def __init__(self, model: AlbertPretrainer, max_seq_length: int,
                 max_predictions_per_seq: int, batch_size: int):
        self.model = model
        self.shape = (max_seq_length, max_predictions_per_seq)
        self.batch_size = batch_size
        self._step = tf.function(self._outputs, reduce_retracing=True)

    def _outputs(self, features, labels):
        outputs = self.model(features, training=False)
        pooled = self.model.encoder({k: features[k] for k in INPUT_NAMES},
                                    training=False)["pooled_output"]
        predicted = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        return {"mlm_hits": tf.cast(predicted == tf.cast(labels["masked_lm_ids"], tf.int32),
                                    tf.float32),
                "mlm_weights": tf.cast(labels["masked_lm_weights"], tf.float32),
                "head_predictions": tf.argmax(outputs["sop_logits"], axis=-1,
                                              output_type=tf.int32),
                "pooled": tf.cast(pooled, tf.float32),
                "labels": tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])}

    def __call__(self, records: str, limit: int | None = None) -> dict[str, np.ndarray]:
        """One pass over `records` in file order (the first `limit` instances)."""
        dataset = pretraining_dataset(records, self.batch_size, *self.shape, is_training=False,
                                      drop_remainder=False)
        if limit is not None:
            dataset = dataset.unbatch().take(limit).batch(self.batch_size)
        parts: dict[str, list[np.ndarray]] = {}
        for batch in dataset.map(to_model_inputs):
            for key, value in self._step(*batch).items():
                parts.setdefault(key, []).append(value.numpy())
        return {key: np.concatenate(values) for key, values in parts.items()}


def masked_lm_accuracy(outputs: Mapping[str, np.ndarray]) -> float:
    """Σ w·[argmax = id] / Σ w over the masked positions (the eval metric of faithfulness §4.4)."""
    return float((outputs["mlm_hits"] * outputs["mlm_weights"]).sum()
                 / max(outputs["mlm_weights"].sum(), 1e-9))


def head_accuracy(outputs: Mapping[str, np.ndarray]) -> float:
    return float((outputs["head_predictions"] == outputs["labels"]).mean())


def probe_accuracy(train: Mapping[str, np.ndarray], test: Mapping[str, np.ndarray],
                   seed: int = 0) -> float:
    """Held-out accuracy of a logistic-regression probe on frozen pooled outputs
    (features standardised on the probe's training set)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(np.unique(train["labels"])) < 2:
        return float("nan")
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))
    probe.fit(train["pooled"], train["labels"])
    return float(probe.score(test["pooled"], test["labels"]))


def evaluate_pretrained(config: AlbertConfig, checkpoint_dir: str, train_records: Mapping[str, str],
                        heldout_records: Mapping[str, str], trained_task: str,
                        max_seq_length: int, max_predictions_per_seq: int, batch_size: int,
                        probe_train: int) -> dict[str, float | None]:
    """Held-out masked-LM accuracy (on the "none" pairs: text in order) and, on held-out SOP
    and NSP pairs, the model's head accuracy (None for a model trained without a sentence
    task) and the linear-probe accuracy (percentages)."""
    read = OutputReader(load_pretrainer(config, checkpoint_dir), max_seq_length,
                        max_predictions_per_seq, batch_size)
    results: dict[str, float | None] = {
        "heldout_mlm_accuracy": 100 * masked_lm_accuracy(read(heldout_records["none"]))}
    for task in ("sop", "nsp"):
        heldout = read(heldout_records[task])
        probe_fit = read(train_records[task], limit=probe_train)
        results[f"{task}_head_accuracy"] = (
            None if trained_task == "none" else 100 * head_accuracy(heldout))
        results[f"{task}_probe_accuracy"] = 100 * probe_accuracy(probe_fit, heldout)
    return results
