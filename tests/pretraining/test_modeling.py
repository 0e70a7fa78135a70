"""MLM / SOP losses and metrics (faithfulness §4) against NumPy, and the global-normalizer split."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining.modeling import (METRIC_NAMES, PretrainingObjective, masked_lm_loss,
                                             sentence_order_loss)


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.fixture
def batch():
    rng = np.random.default_rng(3)
    b, p, v = 6, 5, 11
    labels = {"masked_lm_ids": rng.integers(0, v, (b, p)).astype("int32"),
              "masked_lm_weights": (rng.random((b, p)) < 0.7).astype("float32"),
              "next_sentence_labels": rng.integers(0, 2, (b, 1)).astype("int32")}
    outputs = {"mlm_logits": rng.normal(size=(b, p, v)).astype("float32"),
               "sop_logits": rng.normal(size=(b, 2)).astype("float32")}
    return labels, outputs


def np_losses(labels, outputs):
    lp = np_log_softmax(outputs["mlm_logits"].astype(np.float64))
    ids, w = labels["masked_lm_ids"], labels["masked_lm_weights"]
    per = -np.take_along_axis(lp, ids[..., None], -1)[..., 0]
    mlm = (w * per).sum() / (w.sum() + 1e-5)
    sop_lp = np_log_softmax(outputs["sop_logits"].astype(np.float64))
    sop = -np.take_along_axis(sop_lp, labels["next_sentence_labels"], -1).mean()
    return per, mlm, sop


def test_losses_match_spec_formulas(batch):
    labels, outputs = batch
    _, mlm, sop = np_losses(labels, outputs)
    got_mlm = masked_lm_loss(outputs["mlm_logits"], labels["masked_lm_ids"], labels["masked_lm_weights"])
    got_sop = sentence_order_loss(outputs["sop_logits"], labels["next_sentence_labels"])
    assert float(got_mlm) == pytest.approx(mlm, rel=1e-6)
    assert float(got_sop) == pytest.approx(sop, rel=1e-6)
    objective = PretrainingObjective()
    total = objective.loss(labels, outputs, objective.normalizers(labels))
    assert float(total) == pytest.approx(mlm + sop, rel=1e-6)


def test_halves_with_global_normalizers_sum_to_the_full_batch_loss(batch):
    """What gradient accumulation and replicas rely on: shares add up exactly."""
    labels, outputs = batch
    objective = PretrainingObjective()
    full = objective.loss(labels, outputs, objective.normalizers(labels))
    halves = [{k: v[s] for k, v in d.items()} for d in (labels, outputs) for s in (slice(0, 3), slice(3, 6))]
    (l1, l2), (o1, o2) = halves[:2], halves[2:]
    norms = {k: objective.normalizers(l1)[k] + objective.normalizers(l2)[k] for k in ("masked_lm", "sentence_order")}
    split = objective.loss(l1, o1, norms) + objective.loss(l2, o2, norms)
    assert float(split) == pytest.approx(float(full), rel=1e-6)


def test_metrics_have_the_original_names_and_values(batch):
    labels, outputs = batch
    objective = PretrainingObjective()
    metrics = objective.create_metrics()
    assert tuple(metrics) == METRIC_NAMES
    objective.update_metrics(metrics, labels, outputs)
    per, _, _ = np_losses(labels, outputs)
    w = labels["masked_lm_weights"]
    correct = outputs["mlm_logits"].argmax(-1) == labels["masked_lm_ids"]
    sop_labels = labels["next_sentence_labels"][:, 0]
    sop_lp = np_log_softmax(outputs["sop_logits"].astype(np.float64))
    expected = {
        "masked_lm_accuracy": (w * correct).sum() / w.sum(),
        "masked_lm_loss": (w * per).sum() / w.sum(),
        "sentence_order_accuracy": (outputs["sop_logits"].argmax(-1) == sop_labels).mean(),
        "sentence_order_loss": -sop_lp[np.arange(len(sop_labels)), sop_labels].mean(),
    }
    for name, value in expected.items():
        assert float(metrics[name].result()) == pytest.approx(value, rel=1e-5), name


def test_without_a_sentence_task_the_loss_is_the_masked_lm_alone(batch):
    """--sentence_prediction=none: total loss = the MLM formula, the sentence head gets no
    gradient, and only the MLM metrics exist."""
    labels, outputs = batch
    _, mlm, _ = np_losses(labels, outputs)
    objective = PretrainingObjective(sentence_prediction=False)
    sop_logits = tf.Variable(outputs["sop_logits"])
    with tf.GradientTape() as tape:
        total = objective.loss(labels, {**outputs, "sop_logits": sop_logits},
                               objective.normalizers(labels))
    assert float(total) == pytest.approx(mlm, rel=1e-6)
    assert tape.gradient(total, sop_logits) is None
    metrics = objective.create_metrics()
    assert tuple(metrics) == ("masked_lm_accuracy", "masked_lm_loss")
    objective.update_metrics(metrics, labels, outputs)
