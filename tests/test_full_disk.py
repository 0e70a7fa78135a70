"""A full disk while writing feature records, an export or a converted checkpoint (issue 23,
docs/faults.md): each tool, a real process on a small file system, ends with one line on
stderr naming the path and what was being written, exit status 1, no temporary left and a
previous output intact.

The small file system is a tmpfs where the test may mount one, else a file-size limit on the
child (`tests.training.fault_runs.small_disk` / `limit_file_size`, as the checkpoint test):
the same write fails, with ENOSPC or EFBIG, and the same outcome is checked.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import random_inputs, tiny_config
from tests.training import processes
from tests.training.fault_runs import limit_file_size, small_disk

# Slow tier (make test-all): every tool as a real process on a full file system;
# tests/test_atomic_files.py checks the helpers fast.
pytestmark = pytest.mark.slow

ROOM = 16 * 1024  # bytes left for the output: far less than any of them needs


@contextlib.contextmanager
def starved_disk(directory):
    """Yields (run, cause): run(args) runs `python <args>` with ROOM bytes left to write on
    `directory` (call it once the previous outputs are in place); cause is the strerror the
    failed write must report."""
    with small_disk(directory, ROOM // 1024 + 512) as mounted:

        def run(args: list[str]) -> subprocess.CompletedProcess:
            if mounted:
                with open(os.path.join(directory, "filler"), "wb") as f:
                    f.write(b"\0" * (shutil.disk_usage(directory).free - ROOM))
            return subprocess.run(
                [sys.executable, *args], cwd=processes.REPO, env=processes.python_env(),
                capture_output=True, text=True, timeout=120,
                preexec_fn=None if mounted else functools.partial(limit_file_size, ROOM))

        yield run, ("[Errno 28] No space left on device" if mounted
                    else "[Errno 27] File too large")


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The process's single error line (exit status 1; nothing else names an error)."""
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return errors[0]


def write_previous(directory, names: list[str]) -> None:
    os.makedirs(directory, exist_ok=True)
    for name in names:
        with open(os.path.join(directory, name), "wb") as f:
            f.write(b"previous " + name.encode())


def assert_only_previous(directory, names: list[str]) -> None:
    """No temporary, no partial output: just the previous files, unchanged."""
    assert sorted(os.listdir(directory)) == sorted(names)
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            assert f.read() == b"previous " + name.encode(), name


def test_pretraining_records(tmp_path):
    """Two outputs, the first with a previous version: neither is published, none half."""
    words = [f"w{i}" for i in range(40)]
    (tmp_path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    rng = np.random.default_rng(0)
    documents = ["\n".join(" ".join(rng.choice(words, 8)) for _ in range(6)) for _ in range(40)]
    (tmp_path / "corpus.txt").write_text("\n\n".join(documents) + "\n")
    out = tmp_path / "disk" / "out"
    with starved_disk(tmp_path / "disk") as (run, cause):
        write_previous(out, ["pretrain.tfrecord"])
        result = run(["-m", "albert_tf.create_pretraining_data",
                      f"--input_file={tmp_path / 'corpus.txt'}",
                      f"--output_file={out}/pretrain.tfrecord,{out}/second.tfrecord",
                      f"--vocab_file={tmp_path / 'vocab.txt'}", "--max_seq_length=32",
                      "--max_predictions_per_seq=4", "--dupe_factor=2", "--num_workers=1"])
        line = one_error_line(result)
        assert line.startswith("create_pretraining_data: error: disk full while writing "
                               f"pretraining records {out}/pretrain.tfrecord: "), line
        assert line.endswith(cause), line
        assert_only_previous(out, ["pretrain.tfrecord"])


_FEATURE_RECORDS = r"""
import sys
import numpy as np
from albert_tf import cli
from albert_tf.finetuning.records import write_feature_records

columns = {"input_ids": ("int64", np.arange(64 * 128).reshape(64, 128))}
cli.run_script("run_classifier", ["run_classifier.py"],
               lambda: write_feature_records(sys.argv[1], columns))
"""


def test_fine_tuning_feature_records(tmp_path):
    """The feature cache's writer (train.tf_record of run_classifier/run_race/run_squad),
    through the fine-tuning scripts' `cli.run_script`; the previous cache stays."""
    out = tmp_path / "disk" / "out"
    with starved_disk(tmp_path / "disk") as (run, cause):
        write_previous(out, ["train.tf_record"])
        line = one_error_line(run(["-c", _FEATURE_RECORDS, f"{out}/train.tf_record"]))
        assert line.startswith("run_classifier: error: disk full while writing feature records "
                               f"{out}/train.tf_record: "), line
        assert line.endswith(cause), line
        assert_only_previous(out, ["train.tf_record"])


def test_export(tmp_path):
    """export_tfhub's encoder SavedModel: no export directory, no staging directory."""
    config = tmp_path / "albert_config.json"
    tiny_config().to_json_file(config)
    exports = tmp_path / "disk" / "exports"
    with starved_disk(tmp_path / "disk") as (run, cause):
        write_previous(exports, ["older_export_note"])
        result = run(["-m", "albert_tf.export_tfhub", f"--albert_config_file={config}",
                      f"--export_path={exports}/encoder"])
        line = one_error_line(result)
        assert line.startswith(f"export_tfhub: error: disk full while writing export "
                               f"{exports}/encoder: "), line
        assert line.endswith(cause), line
        assert_only_previous(exports, ["older_export_note"])


@pytest.fixture(scope="module")
def original_checkpoint(tmp_path_factory) -> str:
    """A tiny original-format checkpoint prefix (albert_config.json beside it)."""
    from albert_tf import checkpoints
    from albert_tf.models import AlbertPretrainer

    root = tmp_path_factory.mktemp("original")
    config = tiny_config()
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    checkpoints.save_original_checkpoint(model, str(root / "model.ckpt-best"), global_step=3)
    config.to_json_file(root / "albert_config.json")
    return str(root / "model.ckpt-best")


@pytest.mark.parametrize("to, previous", [
    ("hf", ["config.json", "model.safetensors"]),  # written by safetensors
    ("original", ["checkpoint", "model.ckpt.index"]),  # written by TensorFlow's Saver
])
def test_converted_checkpoint(tmp_path, original_checkpoint, to, previous):
    """convert into a directory holding an earlier conversion: that one stays as it was."""
    out = tmp_path / "disk" / "converted"
    with starved_disk(tmp_path / "disk") as (run, cause):
        write_previous(out, previous)
        line = one_error_line(run(["-m", "albert_tf.convert", f"--input={original_checkpoint}",
                                   f"--output={out}", f"--to={to}"]))
        assert line.startswith("convert: error: disk full while writing converted checkpoint "
                               f"{out}: "), line
        assert line.endswith(cause), line
        assert_only_previous(out, previous)


def test_a_failed_final_flush_leaves_no_temporary(tmp_path, monkeypatch):
    """AtomicTFRecordWriter.close(): the last flush/fsync failing for want of space removes
    the temporary and raises DiskFullError naming the target (in process: fsync made to fail)."""
    import errno

    from albert_tf.runtime.atomic_files import DiskFullError
    from albert_tf.data.tfrecord_io import AtomicTFRecordWriter

    def no_space(handle):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    writer = AtomicTFRecordWriter(str(tmp_path / "a.tfrecord"), what="feature records")
    writer.write_many([b"x" * 100])
    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(DiskFullError) as caught:
        writer.close()
    assert str(caught.value) == (f"disk full while writing feature records {tmp_path}/a.tfrecord: "
                                 "[Errno 28] No space left on device")
    assert caught.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == []
