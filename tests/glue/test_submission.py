"""Prediction files in the original's and the GLUE server's formats (faithfulness §8.6)."""

from __future__ import annotations

import numpy as np
import pytest

from albert_tf.glue import SUBMISSION_FILES, get_task, read_submission, write_prediction_files


def test_submission_file_names_cover_the_benchmark():
    assert sorted(SUBMISSION_FILES) == sorted([
        "AX.tsv", "CoLA.tsv", "MNLI-m.tsv", "MNLI-mm.tsv", "MRPC.tsv", "QNLI.tsv", "QQP.tsv",
        "RTE.tsv", "SST-2.tsv", "STS-B.tsv", "WNLI.tsv"])


def test_classification_files(tmp_path):
    task = get_task("rte")
    logits = np.array([[2.0, 0.0], [-1.0, 1.0], [0.5, 0.4]])
    paths = write_prediction_files(str(tmp_path), task, ["0", "1", "2"], logits)
    assert [p.split("/")[-1] for p in paths] == ["test_results.tsv", "submit_results.tsv", "RTE.tsv"]
    assert (tmp_path / "RTE.tsv").read_text() == (
        "index\tprediction\n0\tentailment\n1\tnot_entailment\n2\tentailment\n")
    assert (tmp_path / "submit_results.tsv").read_text() == (tmp_path / "RTE.tsv").read_text()
    probabilities = np.loadtxt(tmp_path / "test_results.tsv", delimiter="\t")
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-12)
    assert read_submission(str(tmp_path / "RTE.tsv"), task) == [
        ("0", "entailment"), ("1", "not_entailment"), ("2", "entailment")]


def test_regression_files(tmp_path):
    task = get_task("sts-b")
    write_prediction_files(str(tmp_path), task, ["7", "8"], np.array([[3.25], [0.5]]))
    assert read_submission(str(tmp_path / "STS-B.tsv"), task) == [("7", 3.25), ("8", 0.5)]
    assert (tmp_path / "test_results.tsv").read_text() == "3.25\n0.5\n"


@pytest.mark.parametrize("content,message", [
    ("id\tlabel\n0\t1\n", "expected header"),
    ("index\tprediction\n0\t1\t2\n", "expected 2 fields"),
    ("index\tprediction\n0\t1\n0\t0\n", "duplicate index"),
    ("index\tprediction\n0\tmaybe\n", "unknown label"),
])
def test_read_submission_rejects_what_the_server_rejects(tmp_path, content, message):
    path = tmp_path / "CoLA.tsv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_submission(str(path), get_task("cola"))
