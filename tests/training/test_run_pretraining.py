"""run_pretraining.py: flags validated up front, bad input is one line and exit status 1."""

from __future__ import annotations

import pytest

from tests.training import processes

REQUIRED = ["--albert_config_file=c.json", "--input_file=x", "--output_dir=out"]


@pytest.mark.parametrize("flags,message", [
    (["--optimizer=lambo"], "value should be one of <lamb|adamw>"),
    (["--distribution_strategy=mirorred"], "one_device|mirrored|multi_worker_mirrored|tpu"),
    (["--dtype=float8"], "float32|float16|bfloat16"),
    (["--masked_lm_budget=20"], "use --dynamic_masking"),
    (["--do_train=false"], "at least one of --do_train and --do_eval"),
    (["--gradient_accumulation_steps=0"], "gradient_accumulation_steps"),
    (["--clip_norm_mode=sparse"], "value should be one of <original|dense>"),
])
def test_bad_flags_fail_before_anything_runs(flags, message):
    result = processes.run(["run_pretraining.py", *REQUIRED, *flags], timeout=60)
    assert result.returncode != 0
    assert message in result.stderr


def test_missing_required_flag():
    result = processes.run(["run_pretraining.py", "--input_file=x", "--output_dir=o"], timeout=60)
    assert result.returncode != 0 and "albert_config_file" in result.stderr


def test_missing_config_is_one_line(tmp_path):
    result = processes.run(["run_pretraining.py", f"--albert_config_file={tmp_path}/none.json",
                            "--input_file=x", f"--output_dir={tmp_path}"], timeout=60)
    assert result.returncode == 1
    assert "none.json: config file not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_lists_original_and_new_flags():
    result = processes.run(["run_pretraining.py", "--helpfull"], timeout=60)
    for name in ("init_from_group0", "poly_power", "iterations_per_loop", "tpu_name",
                 "distribution_strategy", "gradient_accumulation_steps", "dynamic_masking",
                 "deterministic", "log_steps", "jit_compile", "num_gpus", "clip_norm_mode",
                 "recompute_grad"):
        assert f"--{name}" in result.stdout or f"--[no]{name}" in result.stdout, name
