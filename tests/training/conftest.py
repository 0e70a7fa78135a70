"""Fixtures of the training tests: tiny TFRecords in the original format, a tiny config,
and the 2-replica MirroredStrategy runs (one subprocess shared by the tests that read them)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import tiny_config
from tests.run_once import run_once
from tests.training import fault_runs, processes, synthetic

SEQ_LEN, NUM_PREDICTIONS = 16, 4


@pytest.fixture(scope="session")
def pretraining_files(tmp_path_factory):
    """(config.json, input_file glob, common run_pretraining flags) for 2 × 48 examples."""
    return tuple(run_once(tmp_path_factory, "pretraining_data", _write_pretraining_files))


def _write_pretraining_files(root) -> tuple[str, str, list[str]]:
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
def mirrored_parity(tmp_path_factory) -> dict:
    """The JSON of tests/training/scripts/mirrored_parity.py (2 logical CPUs): the losses."""
    return run_once(tmp_path_factory, "mirrored_parity", lambda _: _mirrored_parity())


@pytest.fixture(scope="session")
def mirrored_clipping_norms(tmp_path_factory) -> dict:
    """The same script's `clipping` part: test_clipping's per-step norms on 2 replicas."""
    return run_once(tmp_path_factory, "mirrored_clipping_norms",
                    lambda _: _mirrored_parity("clipping"))


def _mirrored_parity(*args: str) -> dict:
    result = processes.run(["-m", "tests.training.scripts.mirrored_parity", *args], timeout=420)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# The uninterrupted run the fault tests compare with (tests/training/test_faults_*.py):
# dropout on, deterministic ops, checkpoints at 4, 8 and 12, one step per loop call. One layer
# (ALBERT shares its weights across layers, so the checkpoint holds the same variables as two):
# each process of these tests traces one layer fewer.
FAULT_RUN_FLAGS = ["--deterministic", "--train_batch_size=8", "--num_train_steps=12",
                   "--save_checkpoints_steps=4", "--iterations_per_loop=1", "--log_steps=1"]


@pytest.fixture(scope="session")
def fault_run(tmp_path_factory, pretraining_files) -> tuple[list[str], str]:
    """(run_pretraining flags without --output_dir, the output_dir of their uninterrupted run)."""
    _, _, common = pretraining_files
    return tuple(run_once(tmp_path_factory, "fault_run", lambda root: _fault_run(root, common)))


def _fault_run(root, common: list[str]) -> tuple[list[str], str]:
    config = root / "dropout_config.json"
    tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                num_hidden_layers=1).to_json_file(config)
    flags = [*common, f"--albert_config_file={config}", *FAULT_RUN_FLAGS]
    result = processes.run(["run_pretraining.py", *flags, f"--output_dir={root / 'reference'}"],
                           timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return flags, str(root / "reference")


@pytest.fixture(scope="session")
def multi_worker_run(tmp_path_factory, fault_run) -> dict:
    """fault_run's flags on two MultiWorkerMirrored worker processes, uninterrupted: {"flags",
    "output_dir" (the chief's; worker 1's checkpoints are in its .worker_1), "logs" (the
    workers' outputs)}. The reference of test_faults_workers.py, checked by test_distribute.py."""
    flags, _ = fault_run
    return run_once(tmp_path_factory, "multi_worker_run",
                    lambda root: _multi_worker_run(root, flags))


def _multi_worker_run(root, flags: list[str]) -> dict:
    results = fault_runs.finish_all(fault_runs.start_workers(flags, root / "run"))
    for status, log in results:
        assert status == 0, log[-3000:]
    return {"flags": flags, "output_dir": str(root / "run"), "logs": [log for _, log in results]}
