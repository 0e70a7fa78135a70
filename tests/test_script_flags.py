"""Every script refuses a non-finite or out-of-range float flag (and a bad choice) at start:
one line `<script>: error: flag --x=v: expected …` on stderr, exit status 1, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=RUNTIME_PYTHONPATH)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user runs them
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


CASES = [
    ("run_pretraining", ["run_pretraining.py", "--albert_config_file=c.json", "--input_file=x"],
     "--learning_rate=nan", "flag --learning_rate=nan: expected a finite number"),
    ("run_pretraining", ["run_pretraining.py", "--albert_config_file=c.json", "--input_file=x"],
     "--poly_power=0", "flag --poly_power=0.0: expected a finite number > 0"),
    ("run_classifier", ["run_classifier.py", "--task_name=MRPC", "--data_dir=d", "--do_train"],
     "--learning_rate=0", "flag --learning_rate=0.0: expected a finite number > 0 with --do_train"),
    ("run_classifier", ["run_classifier.py", "--task_name=MRPC", "--data_dir=d", "--do_eval"],
     "--threshold_to_export=inf", "flag --threshold_to_export=inf: expected a finite number"),
    ("run_squad", ["run_squad.py", "--do_train"],
     "--num_train_epochs=-1", "flag --num_train_epochs=-1.0: expected a finite number > 0 with "
                              "--do_train"),
    ("run_squad", ["run_squad.py", "--do_predict"],
     "--warmup_proportion=1.5", "flag --warmup_proportion=1.5: expected a finite number in [0, 1]"),
    ("run_race", ["run_race.py", "--data_dir=d"],
     "--dropout_prob=1", "flag --dropout_prob=1.0: expected a finite number in [0, 1)"),
    ("run_race", ["run_race.py", "--data_dir=d", "--nodo_train"],
     "--eval_timeout_secs=0", "flag --eval_timeout_secs=0.0: expected a finite number > 0"),
    ("create_pretraining_data", ["-m", "albert_tf.create_pretraining_data", "--input_file=x"],
     "--masked_lm_prob=inf", "flag --masked_lm_prob=inf: expected a finite number"),
    ("train_sentencepiece", ["-m", "albert_tf.train_sentencepiece", "--input=x"],
     "--character_coverage=0", "flag --character_coverage=0.0: expected a finite number in (0, 1]"),
]


@pytest.mark.parametrize("script,args,bad,message", CASES,
                         ids=[f"{c[0]}{c[2]}" for c in CASES])
def test_bad_float_flag_is_one_line_and_nothing_is_written(tmp_path, script, args, bad, message):
    out = tmp_path / "out"
    output_flag = {"create_pretraining_data": f"--output_file={out}",
                   "train_sentencepiece": f"--model_prefix={out}"}.get(script, f"--output_dir={out}")
    result = run([*args, output_flag, bad])
    assert result.returncode == 1
    assert result.stderr.strip() == f"{script}: error: {message}"
    assert list(tmp_path.iterdir()) == []


def test_other_flag_errors_use_the_same_line():
    result = run(["run_classifier.py", "--task_name=MRPC", "--data_dir=d"])
    assert result.returncode == 1
    assert result.stderr.strip() == ("run_classifier: error: flag --output_dir=None: "
                                     "Flag --output_dir must have a value other than None.")


FINE_TUNING_SCRIPTS = {
    "run_classifier": ["run_classifier.py", "--task_name=MRPC", "--data_dir=d", "--do_train"],
    "run_race": ["run_race.py", "--data_dir=d", "--do_train"],
    "run_squad": ["run_squad.py", "--do_train"],
}


@pytest.mark.parametrize("script", sorted(FINE_TUNING_SCRIPTS))
def test_bad_clip_norm_mode_is_one_line(tmp_path, script):
    """The loop's enum flags (here --clip_norm_mode) are checked like the float ones."""
    out = tmp_path / "out"
    result = run([*FINE_TUNING_SCRIPTS[script], f"--output_dir={out}", "--recompute_grad",
                  "--clip_norm_mode=sparse"])
    assert result.returncode == 1
    assert result.stderr.strip() == (f"{script}: error: flag --clip_norm_mode=sparse: value "
                                     "should be one of <original|dense>")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", ["run_classifier", "run_squad"])
def test_bad_tflite_quantization_is_one_line(tmp_path, script):
    """--tflite_quantization takes the names of albert_tf.export.choices only."""
    out = tmp_path / "out"
    result = run([*FINE_TUNING_SCRIPTS[script], f"--output_dir={out}",
                  f"--export_dir={tmp_path / 'export'}", "--tflite_quantization=int4"])
    assert result.returncode == 1
    assert result.stderr.strip() == (f"{script}: error: flag --tflite_quantization=int4: value "
                                     "should be one of <none|dynamic_int8|float16>")
    assert list(tmp_path.iterdir()) == []
