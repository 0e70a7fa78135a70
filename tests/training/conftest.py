"""Fixtures of the training tests: tiny TFRecords in the original format, a tiny config,
and the 2-replica MirroredStrategy runs (one subprocess shared by the tests that read them)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import tiny_config
from tests.training import processes, synthetic

SEQ_LEN, NUM_PREDICTIONS = 16, 4


@pytest.fixture(scope="session")
def pretraining_files(tmp_path_factory):
    """(config.json, input_file glob, common run_pretraining flags) for 2 × 48 examples."""
    root = tmp_path_factory.mktemp("pretraining_data")
    for i in range(2):
        synthetic.write_tfrecords(str(root / f"part-{i}.tfrecord"),
                                  synthetic.make_examples(48, seq_len=SEQ_LEN,
                                                          num_predictions=NUM_PREDICTIONS, seed=i))
    config = root / "albert_config.json"
    tiny_config().to_json_file(config)
    pattern = str(root / "part-*.tfrecord")
    common = [f"--albert_config_file={config}", f"--input_file={pattern}",
              f"--max_seq_length={SEQ_LEN}", f"--max_predictions_per_seq={NUM_PREDICTIONS}",
              "--learning_rate=0.01", "--num_warmup_steps=2", "--seed=7"]
    return str(config), pattern, common


@pytest.fixture(scope="session")
def mirrored_parity() -> dict:
    """The JSON of tests/training/scripts/mirrored_parity.py (2 logical CPUs)."""
    result = processes.run(["-m", "tests.training.scripts.mirrored_parity"], timeout=420)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
