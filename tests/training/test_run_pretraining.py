"""run_pretraining.py: flags validated up front, bad input is one line and exit status 1."""

from __future__ import annotations

import os

import pytest

from albert_tf.data.features import STATIC
from tests.conftest import tiny_config
from tests.data import record_files
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


# ----- records that do not fit the flags or the config: one line, exit 1, nothing written -----
SEQ, PRED = 16, 4


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> str:
    """A tiny model: vocab_size 100, max_position_embeddings 64."""
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    tiny_config(vocab_size=100, max_position_embeddings=64).to_json_file(path)
    return path


def pretrain(config_file: str, input_file: str, output_dir, *extra: str):
    return processes.run(["run_pretraining.py", f"--albert_config_file={config_file}",
                          f"--input_file={input_file}", f"--output_dir={output_dir}",
                          f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}",
                          "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=0",
                          "--save_checkpoints_steps=2", "--log_steps=1", *extra], timeout=300)


def error_line(result) -> str:
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, result.stderr[-2000:]
    assert errors[0].startswith("run_pretraining: error: ")
    return errors[0][len("run_pretraining: error: "):]


@pytest.mark.parametrize("case", ["64-token records", "records of a larger vocabulary"])
def test_records_that_do_not_fit_stop_before_anything_is_written(config_file, tmp_path, case):
    path = str(tmp_path / "data.tfrecord")
    if case == "64-token records":  # no JSON summary: read from the first record
        record_files.write(path, record_files.rows(8, 64, PRED))
        expected = (f"{path}: records hold 64 tokens per record (input_ids) but "
                    f"--max_seq_length={SEQ}; pass --max_seq_length=64 or rewrite the records")
    else:
        record_files.write(path, record_files.rows(8, SEQ, PRED),
                           summary=record_files.summary_of(STATIC, SEQ, PRED, vocab_size=1201))
        expected = (f"{path}: written with a vocabulary of 1201 pieces ({path}.json) but "
                    f"vocab_size is 100 in --albert_config_file={config_file}")
    out = tmp_path / "out"
    assert error_line(pretrain(config_file, path, out)).startswith(expected)
    assert not out.exists()


def test_bad_id_deep_in_a_file_stops_training_with_file_and_record(config_file, tmp_path):
    """The first record is fine (no summary): the in-graph check finds record 5 (read many
    times over 50 steps of 4 from 8 records; no checkpoint is due before step 50)."""
    features = record_files.rows(8, SEQ, PRED)
    features["input_ids"][5, 2] = 1201
    path = record_files.write(str(tmp_path / "data.tfrecord"), features)
    out = tmp_path / "out"
    message = error_line(pretrain(config_file, path, out, "--iterations_per_loop=1",
                                  "--num_train_steps=50", "--save_checkpoints_steps=50"))
    assert message == (f"{path}: record 5: input_ids holds 1201, outside [0, 100) (vocab_size "
                       f"of --albert_config_file={config_file})")
    assert not any(name.startswith("ckpt") or name.startswith("model.ckpt")
                   for name in os.listdir(out))


def test_init_checkpoint_that_does_not_fit_stops_before_output_dir(tmp_path):
    """An HF sequence classifier as --init_checkpoint (its config.json stands in for
    --albert_config_file): the pretrainer's MLM and SOP heads are missing, said in one line
    before the Trainer creates output_dir. (The other cases: tests/finetuning/test_preflight.)"""
    from albert_tf import checkpoints
    from albert_tf.models import AlbertClassifier
    from tests.conftest import random_inputs

    config = tiny_config(vocab_size=100, max_position_embeddings=64)
    classifier = AlbertClassifier(config, 3)
    classifier({k: v for k, v in random_inputs(config).items() if k != "masked_lm_positions"})
    directory = checkpoints.save_hf_checkpoint(classifier, str(tmp_path / "hf"))
    data = record_files.write(str(tmp_path / "data.tfrecord"), record_files.rows(8, SEQ, PRED))
    out = tmp_path / "out"
    result = processes.run(["run_pretraining.py", f"--init_checkpoint={directory}",
                            f"--input_file={data}", f"--output_dir={out}",
                            f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}",
                            "--train_batch_size=4", "--num_train_steps=2"], timeout=300)
    assert error_line(result).startswith(
        f"--init_checkpoint={directory}: {directory}/model.safetensors: checkpoint does not "
        "match AlbertPretrainer; model variables missing from the checkpoint (7): "
        "predictions.dense.weight, predictions.dense.bias")
    assert not out.exists()
