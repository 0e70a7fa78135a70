"""Under umask 022 every file the tools write is 0644 and every directory 0755 (issue 20 §3):
a tiny version of `make demo`'s steps and of the exports, in one process started with that
umask (each tool run as `python -m` runs it: tests/in_process_tools.run_tool), then a walk over
everything they wrote.

A model server running as another user (the usual TF Serving set-up) must be able to read the
exports; owner-only modes (what tempfile.mkstemp/mkdtemp give) broke that."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.conftest import tiny_config
from tests.training.processes import REPO, python_env

# Slow tier (make test-all): every tool run once on tiny data (≈1 min);
# tests/test_atomic_files.py checks the modes the helpers give fast.
pytestmark = pytest.mark.slow

SEQ = 32
# Every tool, the exports, conversions and the plot in one process (a TensorFlow start-up per
# tool would double the test's time; the umask, not the process boundary, is what is tested):
# the tools through run_tool, the rest by the library calls their command lines make.
_JOB = r"""
import json, sys
from tests.in_process_tools import run_tool

config, out, seq, tools = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
for module, *args in tools:
    result = run_tool(module, *args)
    if result.status != 0:
        sys.exit(f"{module} exited {result.status}:\n{result.stderr[-3000:]}")

from albert_tf import AlbertConfig
from albert_tf.checkpoints.conversion import convert_checkpoint
from albert_tf.export.tfhub import export_encoder, export_preprocessing
from albert_tf.experiments.curves import plot, read_scalars

spm = f"{out}/spm.model"
export_encoder(AlbertConfig.from_json_file(config), f"{out}/mrpc/model.ckpt-best",
               f"{out}/export/encoder", spm, True, with_mlm=False)
export_preprocessing(spm, f"{out}/export/preprocess", True, seq)
convert_checkpoint(f"{out}/pretrain", f"{out}/converted/hf", "hf", config, spm_model_file=spm)
convert_checkpoint(f"{out}/converted/hf", f"{out}/converted/original", "original")
convert_checkpoint(f"{out}/converted/hf", f"{out}/converted/keras", "keras")
plot(read_scalars(f"{out}/pretrain"), ["loss"], f"{out}/pretraining_curves.png", "pretrain")
"""


def test_every_output_is_0644_and_every_directory_0755(tmp_path):
    config = str(tmp_path / "albert_config.json")  # an input: written by this process
    tiny_config(vocab_size=1000, max_position_embeddings=64).to_json_file(config)
    out = tmp_path / "out"
    common = [f"--albert_config_file={config}", f"--max_seq_length={SEQ}"]
    tools = [
        ["albert_tf.corpus.build", f"--output={out}/corpus.txt", "--max_documents=300"],
        ["albert_tf.train_sentencepiece", f"--input={out}/corpus.txt",
         f"--model_prefix={out}/spm", "--vocab_size=1000"],
        ["albert_tf.create_pretraining_data", f"--input_file={out}/corpus.txt",
         f"--output_file={out}/pretrain.tfrecord", f"--spm_model_file={out}/spm.model",
         f"--max_seq_length={SEQ}", "--max_predictions_per_seq=4", "--dupe_factor=1",
         "--num_workers=1"],
        ["albert_tf.run_pretraining", *common, f"--input_file={out}/pretrain.tfrecord",
         f"--output_dir={out}/pretrain", "--max_predictions_per_seq=4", "--train_batch_size=8",
         "--num_train_steps=2", "--num_warmup_steps=1", "--learning_rate=1e-3",
         "--save_checkpoints_steps=2", "--iterations_per_loop=1", "--log_steps=1", "--do_eval",
         "--eval_batch_size=8", "--max_eval_steps=1"],
        ["albert_tf.corpus.make_glue_task", f"--output_dir={out}/glue",
         f"--corpus={out}/corpus.txt", "--num_train=16", "--num_dev=8", "--num_test=8"],
        ["albert_tf.run_classifier", *common, "--task_name=MRPC", f"--data_dir={out}/glue",
         f"--output_dir={out}/mrpc", f"--spm_model_file={out}/spm.model",
         f"--init_checkpoint={out}/pretrain", "--do_train", "--do_eval", "--do_predict",
         "--train_batch_size=8", "--eval_batch_size=8", "--predict_batch_size=8",
         "--learning_rate=1e-4", "--train_step=2", "--save_checkpoints_steps=2", "--log_steps=1",
         f"--export_dir={out}/mrpc_export"],
    ]
    result = subprocess.run([sys.executable, "-c", _JOB, config, str(out), str(SEQ), json.dumps(tools)],
                            cwd=REPO, env=python_env(), umask=0o022, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]

    files, directories = {}, {}
    for directory, dirs, names in os.walk(out):
        for name, found in [(d, directories) for d in dirs] + [(n, files) for n in names]:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, out)] = stat.S_IMODE(os.lstat(path).st_mode)
    # Every kind of output is there (so the walk below covers it) and nothing was left half-done.
    for expected in ("corpus.txt", "spm.model", "pretrain.tfrecord", "pretrain/checkpoint",
                     "pretrain/eval_results.txt", "glue/MRPC/train.tsv", "mrpc/mrpc_train.tf_record",
                     "mrpc/model.ckpt-best.index", "mrpc/eval_results.txt", "mrpc/MRPC.tsv",
                     "mrpc_export/saved_model/saved_model.pb", "mrpc_export/albert_model.tflite",
                     "export/encoder/assets/albert_config.json", "export/encoder/assets/spm.model",
                     "export/preprocess/saved_model.pb", "converted/hf/model.safetensors",
                     "converted/original/model.ckpt.index", "converted/keras/checkpoint",
                     "pretraining_curves.png"):
        assert expected in files, (expected, sorted(files))
    assert any(path.startswith("pretrain/train/events.") for path in files)
    assert not [path for path in {**files, **directories} if path.endswith(".tmp")]
    assert {path: oct(mode) for path, mode in files.items() if mode != 0o644} == {}
    assert {path: oct(mode) for path, mode in directories.items() if mode != 0o755} == {}
