"""`--help` / `--helpshort` of every script and `python -m albert_tf.<tool>` prints the tool's
flags on stdout and exits 0 (absl's own exit status is 1), and lists the loop's flags the
README teaches (`--dtype`, `--jit_compile`, `--seed`, `--bucket_by_length`), not only the
flags the script file itself defines."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from albert_tf.cli import asks_for_help
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP_FLAGS = ["dtype", "jit_compile", "seed", "distribution_strategy", "gradient_accumulation_steps"]

# The original's scripts: `python run_x.py` in a clone (a shim) and the package module.
SCRIPTS: dict[str, list[str]] = {
    "run_pretraining": ["input_file", "num_train_steps", *LOOP_FLAGS],
    "run_classifier": ["task_name", "init_checkpoint", "bucket_by_length", *LOOP_FLAGS],
    "run_squad": ["version_2_with_negative", "bucket_by_length", *LOOP_FLAGS],
    "run_race": ["data_dir", "bucket_by_length", *LOOP_FLAGS],
}
# command → flags its --helpshort must list (each tool's own flags, and the taught loop flags).
TOOLS: dict[str, list[str]] = {
    **{f"{name}.py": flags for name, flags in SCRIPTS.items()},
    **{f"albert_tf.{name}": flags for name, flags in SCRIPTS.items()},
    "albert_tf.corpus.build": ["output"],
    "albert_tf.train_sentencepiece": ["input", "model_prefix", "vocab_size"],
    "albert_tf.create_pretraining_data": ["input_file", "spm_model_file", "dupe_factor"],
    "albert_tf.corpus.make_glue_task": ["output_dir", "num_train"],
    "albert_tf.corpus.make_race_task": ["output_dir"],
    "albert_tf.compare_runs": ["metric", "runs"],
    "albert_tf.export_tfhub": ["checkpoint", "export_path", "dtype"],
    "albert_tf.classify_with_exports": ["encoder_export", "pairs_file"],
    "albert_tf.plot_curves": ["event_dir", "output", "tags"],
    "albert_tf.convert": ["input", "output", "to"],
    "albert_tf.export_checkpoints": ["albert_directory", "checkpoint_name", "export_path"],
    "albert_tf.model_report": ["output_dir"],
    "albert_tf.write_config": ["preset", "output"],
    "albert_tf.experiments.paper": ["output_dir", "tables"],
}


def run_help(tool: str, *flags: str) -> subprocess.CompletedProcess:
    command = [tool] if tool.endswith(".py") else ["-m", tool]
    env = dict(os.environ, PYTHONPATH=RUNTIME_PYTHONPATH, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, *command, *flags], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def listed(flag: str, text: str) -> bool:
    """absl lists `--name: help` (bool flags as `--[no]name: help`)."""
    return re.search(rf"^\s*--(\[no\])?{flag}: ", text, re.M) is not None


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_helpshort_exits_0_and_lists_the_taught_flags(tool):
    result = run_help(tool, "--helpshort")
    assert result.returncode == 0, result.stderr[-2000:]
    missing = [f for f in TOOLS[tool] if not listed(f, result.stdout)]
    assert not missing, f"{tool} --helpshort does not list {missing}:\n{result.stdout}"


@pytest.mark.parametrize("flag", ["--help", "-?", "--helpfull"])
def test_the_other_help_flags_exit_0(flag):
    result = run_help("run_classifier.py", flag)
    assert result.returncode == 0, result.stderr[-2000:]
    assert listed("dtype", result.stdout) and listed("task_name", result.stdout)


def test_help_with_a_bad_flag_is_still_a_usage_error():
    """Help does not hide a mistake before it: absl stops at the first bad flag."""
    result = run_help("run_classifier.py", "--dtype=float8", "--help")
    assert result.returncode == 1
    assert result.stderr.startswith("run_classifier: error: flag --dtype=float8")


def test_asks_for_help():
    assert asks_for_help(["x", "--task_name=MRPC", "--help"])
    assert asks_for_help(["x", "-helpshort"])
    assert asks_for_help(["x", "--helpfull=true"])
    assert not asks_for_help(["x", "--nohelp", "--help=false"])
    assert not asks_for_help(["x", "--", "--help"])
    assert not asks_for_help(["x", "--helper"])
