"""run_pretraining's library call: the script passes every option, checks before TensorFlow,
and the sentence task is checked against the records' .json summary."""

from __future__ import annotations

import ast
import dataclasses
import json
import os

import pytest

from albert_tf.training.pretraining_run import (PretrainingRunOptions, check_sentence_task,
                                                records_sentence_task)
from tests.conftest import tiny_config
from tests.training import processes


def test_the_script_fills_every_option_from_its_flags():
    """run_pretraining.py's _OPTION_FLAGS and the options dataclass name the same settings, so
    the script and in-process callers (albert_tf.experiments) run the same configuration."""
    with open(os.path.join(processes.REPO, "run_pretraining.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_OPTION_FLAGS")
    assert sorted(names) == sorted(f.name for f in dataclasses.fields(PretrainingRunOptions))


def test_check_reports_a_too_long_sequence_without_tensorflow(tmp_path):
    config = tmp_path / "config.json"
    tiny_config(max_position_embeddings=32).to_json_file(str(config))
    options = PretrainingRunOptions(albert_config_file=str(config), input_file="x",
                                    output_dir=str(tmp_path), max_seq_length=64)
    with pytest.raises(ValueError, match="--max_seq_length=64 exceeds the model's max_position_embeddings"):
        options.check()


def write_records_summary(tmp_path, name: str, task: str | None) -> str:
    path = tmp_path / f"{name}.tfrecord"
    path.write_bytes(b"")
    summary = {"instances": 0} if task is None else {"instances": 0, "sentence_prediction": task}
    (tmp_path / f"{name}.tfrecord.json").write_text(json.dumps(summary))
    return str(path)


@pytest.mark.parametrize("made_for,flag,error", [
    ("sop", None, None), ("nsp", None, None), ("sop", "sop", None), ("nsp", "nsp", None),
    ("sop", "none", None), ("nsp", "none", None), ("none", "none", None), (None, "nsp", None),
    ("sop", "nsp", "says its records were made for --sentence_prediction=sop"),
    ("nsp", "sop", "says its records were made for --sentence_prediction=nsp"),
    ("none", None, "--sentence_prediction=(unset: sop or nsp) but"),
    ("none", "sop", "made for --sentence_prediction=none"),
])
def test_sentence_task_must_match_the_records(tmp_path, made_for, flag, error):
    path = write_records_summary(tmp_path, "train", made_for)
    assert records_sentence_task(path) == made_for
    if error is None:
        check_sentence_task(f"{tmp_path}/*.tfrecord", flag)
    else:
        with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
            check_sentence_task(f"{tmp_path}/*.tfrecord", flag)


def test_the_script_reports_a_task_mismatch_in_one_line(tmp_path):
    config = tmp_path / "config.json"
    tiny_config().to_json_file(str(config))
    records = write_records_summary(tmp_path, "train", "sop")
    result = processes.run(["run_pretraining.py", f"--albert_config_file={config}",
                            f"--input_file={records}", f"--output_dir={tmp_path / 'out'}",
                            "--max_seq_length=16", "--sentence_prediction=nsp"], timeout=60)
    assert result.returncode == 1
    assert "made for --sentence_prediction=sop" in result.stderr
    assert "Traceback" not in result.stderr
