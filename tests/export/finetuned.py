"""A tiny classifier fine-tuned on a task it can learn, and the int8 check of issue 21 on it:
int8 keeps the argmax of the fine-tuned classifier on ≥ 99 % of a held-out set.

Shared by the int8 tests of every serving artifact (tests/export/test_serving.py for the TFLite
file, tests/export/test_onnx.py for the ONNX one); trained once per test run (tests/run_once.py:
the other xdist worker restores its weights), a few seconds on 2 cores. A random-weight model would not do: its logits sit near each other, so any
rounding flips argmaxes that a trained model's margins keep.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from albert_tf.models import AlbertClassifier
from tests.conftest import tiny_config
from tests.run_once import run_once

SEQ = 16
MIN_AGREEMENT = 0.99


def bag_of_words_task(count: int, seq: int, vocab: int, seed: int):
    """Label 1 when most of a row's tokens are below vocab/2: a task a 2-layer model learns in
    a few hundred steps, with margins like a real fine-tuned classifier's."""
    rng = np.random.default_rng(seed)
    share = rng.uniform(0.1, 0.9, (count, 1))
    low = rng.uniform(size=(count, seq)) < share
    ids = np.where(low, rng.integers(2, vocab // 2, (count, seq)),
                   rng.integers(vocab // 2, vocab, (count, seq))).astype(np.int32)
    labels = (low.mean(axis=1) > 0.5).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
    return inputs, labels


_TRAINED: list[tuple[AlbertClassifier, dict[str, np.ndarray]]] = []


def _classifier() -> AlbertClassifier:
    keras.utils.set_random_seed(1)
    return AlbertClassifier(tiny_config(vocab_size=100), 2)


def _train(directory) -> dict[str, str]:
    classifier = _classifier()
    train, train_labels = bag_of_words_task(2048, SEQ, classifier.config.vocab_size, seed=0)
    model = keras.Model(classifier.input, classifier(classifier.input)["logits"])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(train, train_labels, batch_size=64, epochs=4, verbose=0)
    assert history.history["accuracy"][-1] > 0.9  # it did learn the task
    weights = str(directory / "classifier.weights.h5")
    classifier.save_weights(weights)
    return {"weights": weights}


def fine_tuned_classifier(tmp_path_factory) -> tuple[AlbertClassifier, dict[str, np.ndarray]]:
    """(a tiny AlbertClassifier fine-tuned to > 90 % training accuracy, its 400 held-out rows
    of length SEQ)."""
    if not _TRAINED:
        weights = run_once(tmp_path_factory, "fine_tuned_classifier", _train)["weights"]
        classifier = _classifier()
        classifier.load_weights(weights)
        dev, _ = bag_of_words_task(400, SEQ, classifier.config.vocab_size, seed=1)
        _TRAINED.append((classifier, dev))
    return _TRAINED[0]


def argmax_agreement(classifier: AlbertClassifier, dev: dict[str, np.ndarray],
                     pooled: np.ndarray) -> tuple[float, float, float]:
    """(share of dev rows whose argmax through the classifier's head on `pooled` — an int8
    artifact's pooled_output — equals the float32 classifier's, max |pooled − float32 pooled|,
    max |float32 pooled|)."""
    want_pooled = classifier.encoder(dev, training=False)["pooled_output"].numpy()
    logits = classifier.classifier_head(tf.constant(pooled), training=False).numpy()
    want = classifier(dev, training=False)["logits"].numpy()
    agreement = float(np.mean(logits.argmax(-1) == want.argmax(-1)))
    return agreement, float(np.abs(pooled - want_pooled).max()), float(np.abs(want_pooled).max())
