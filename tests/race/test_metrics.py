"""Accuracy overall / middle / high, losses, and the predictions file."""

import math

import numpy as np
import pytest

from albert_tf.race.examples import RaceExample
from albert_tf.race.metrics import race_metrics
from albert_tf.race.predictions import read_predictions, write_predictions


def _examples(levels, labels):
    return [RaceExample(f"{level}{i}.txt", i % 2, level, "c", ("a", "b", "c", "d"), label)
            for i, (level, label) in enumerate(zip(levels, labels))]


def test_accuracy_per_level_and_losses():
    levels = ["middle", "middle", "high", "high", "high"]
    labels = [0, 1, 2, 3, 0]
    logits = np.array([[5, 0, 0, 0],    # right
                       [5, 0, 0, 0],    # wrong
                       [0, 0, 5, 0],    # right
                       [0, 0, 0, 5],    # right
                       [0, 0, 0, 0]],   # uniform: argmax A, right
                      np.float32)
    results = race_metrics(logits, _examples(levels, labels), batch_size=2)
    assert results["eval_accuracy"] == pytest.approx(4 / 5)
    assert results["eval_accuracy_middle"] == pytest.approx(1 / 2)
    assert results["eval_accuracy_high"] == pytest.approx(3 / 3)
    right = math.log(1 + 3 * math.exp(-5))       # −log softmax of the 5 against three 0s
    wrong = 5 + math.log(1 + 3 * math.exp(-5))
    uniform = math.log(4)
    losses = [right, wrong, right, right, uniform]
    assert results["eval_loss"] == pytest.approx(np.mean(losses))
    # The Estimator's loss: mean over batches of 2, 2, 1 of each batch's mean.
    batch_means = [np.mean(losses[:2]), np.mean(losses[2:4]), losses[4]]
    assert results["loss"] == pytest.approx(np.mean(batch_means))


def test_unlabelled_examples_are_left_out():
    examples = _examples(["middle", "high", "high"], [None, 1, None])
    logits = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]], np.float32)
    results = race_metrics(logits, examples)
    assert results["eval_accuracy"] == 1.0
    assert "eval_accuracy_middle" not in results and results["eval_accuracy_high"] == 1.0
    assert race_metrics(logits, _examples(["middle"] * 3, [None] * 3)) == {}


def test_predictions_file(tmp_path):
    examples = _examples(["middle", "middle", "high"], [None, None, None])
    logits = np.array([[0, 0, 3, 0], [0, 0, 0, 1], [2, 1, 0, 0]], np.float32)
    path = write_predictions(str(tmp_path / "predictions.tsv"), examples, logits)
    text = open(path, encoding="utf-8").read()
    assert text == ("id\tquestion_index\tprediction\n"
                    "middle0.txt\t0\tC\nmiddle1.txt\t1\tD\nhigh2.txt\t0\tA\n")
    assert read_predictions(path) == [("middle0.txt", 0, "C"), ("middle1.txt", 1, "D"),
                                      ("high2.txt", 0, "A")]
    with pytest.raises(ValueError, match="2 predictions for 3 examples"):
        write_predictions(path, examples, logits[:2])
