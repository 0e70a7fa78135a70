"""GLUE metrics equal scikit-learn / SciPy on random predictions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from albert_tf.glue import accuracy, f1_score, get_task, glue_metrics, matthews_corrcoef, pearson, spearman


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    labels, predictions = rng.integers(0, 2, n), rng.integers(0, 2, n)
    assert accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))
    assert f1_score(labels, predictions) == pytest.approx(sk.f1_score(labels, predictions))
    assert matthews_corrcoef(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions), abs=1e-12)
    three_true, three_pred = rng.integers(0, 3, n), rng.integers(0, 3, n)
    assert matthews_corrcoef(three_true, three_pred) == pytest.approx(
        sk.matthews_corrcoef(three_true, three_pred), abs=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_degenerate_cases_match_sklearn():
    ones, zeros = np.ones(6, int), np.zeros(6, int)
    assert matthews_corrcoef(ones, ones) == sk.matthews_corrcoef(ones, ones) == 0.0
    with np.errstate(all="ignore"):
        assert f1_score(zeros, zeros) == sk.f1_score(zeros, zeros, zero_division=0.0) == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    ties_x, ties_y = rng.integers(0, 5, n).astype(float), np.round(y)  # many ties
    assert spearman(ties_x, ties_y) == pytest.approx(stats.spearmanr(ties_x, ties_y)[0], abs=1e-12)


def test_task_metric_sets_and_keys():
    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(50, 2)), rng.integers(0, 2, 50)
    predictions = logits.argmax(-1)
    ce = -np.log(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True))[np.arange(50), labels]
    cola = glue_metrics(get_task("cola"), logits, labels)
    assert set(cola) == {"eval_accuracy", "eval_loss", "matthew_corr"}
    assert cola["matthew_corr"] == pytest.approx(sk.matthews_corrcoef(labels, predictions))
    assert cola["eval_loss"] == pytest.approx(ce.mean())
    mrpc = glue_metrics(get_task("mrpc"), logits, labels)
    assert set(mrpc) == {"eval_accuracy", "eval_loss", "f1"}
    assert mrpc["f1"] == pytest.approx(sk.f1_score(labels, predictions))
    assert set(glue_metrics(get_task("rte"), logits, labels)) == {"eval_accuracy", "eval_loss"}
    scores, gold = rng.normal(size=(50, 1)), rng.uniform(0, 5, 50)
    weights = np.r_[np.ones(45), np.zeros(5)]  # padding examples are ignored
    stsb = glue_metrics(get_task("sts-b"), scores, gold, weights)
    assert set(stsb) == {"pearson", "spearman", "MSE", "eval_loss"}
    assert stsb["pearson"] == pytest.approx(stats.pearsonr(scores[:45, 0], gold[:45])[0])
    assert stsb["spearman"] == pytest.approx(stats.spearmanr(scores[:45, 0], gold[:45])[0])
    assert stsb["MSE"] == pytest.approx(sk.mean_squared_error(gold[:45], scores[:45, 0]))
