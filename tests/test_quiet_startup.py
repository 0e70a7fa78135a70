"""What a user sees: TensorFlow's start-up notices about a missing GPU are filtered, the
scripts' own logs and real errors are not (albert_tf.quiet_startup)."""

from __future__ import annotations

import os
import warnings

import pytest

from albert_tf import quiet_startup
from tests.conftest import tiny_config
from tests.data import record_files
from tests.training import processes

PRE_INIT = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
CUDART = ("I0000 00:00:1795418813.568358    9138 cudart_stub.cc:31] Could not find cuda drivers "
          "on your machine, GPU will not be used.")
CUINIT = ("E0000 00:00:1795418828.789748    9138 cuda_platform.cc:52] failed call to cuInit: "
          "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)")
ONEDNN = ("E0000 00:00:1795418828.789748    9138 util.cc:131] oneDNN supports DT_INT64 only on "
          "platforms with AVX-512. Falling back to the default Eigen-based implementation if "
          "present.")
REAL = "E0000 00:00:1795418828.789748    9138 op_kernel.cc:1857] OP_REQUIRES failed: disk full"
# Lines none of the scripts may print on a machine without a GPU.
NOISE_MARKERS = ("cuInit", "cudart_stub", "absl::InitializeLog", "oneDNN", "DeprecationWarning",
                 "UserWarning", "FutureWarning", "is deprecated", "Traceback")


def test_noise_lines_are_recognised_and_real_errors_are_not():
    for line in (PRE_INIT, CUDART, ONEDNN):
        assert quiet_startup.is_noise(line + "\n", nvidia_driver=True)
    assert quiet_startup.is_noise(CUINIT, nvidia_driver=False)
    assert not quiet_startup.is_noise(CUINIT, nvidia_driver=True)  # a driver that fails is news
    assert not quiet_startup.is_noise(REAL, nvidia_driver=False)


def test_filtered_stderr_replays_everything_else_in_order(capfd):
    with quiet_startup.filtered_stderr():
        os.write(2, "\n".join([PRE_INIT, CUDART, REAL, CUINIT, "last line"]).encode() + b"\n")
    err = capfd.readouterr().err
    expected = [REAL] + ([CUINIT] if quiet_startup.has_nvidia_driver() else []) + ["last line"]
    assert err.splitlines() == expected


def test_a_failure_inside_the_window_still_shows_its_output(capfd):
    with pytest.raises(RuntimeError):
        with quiet_startup.filtered_stderr():
            os.write(2, (CUDART + "\n" + REAL + "\n").encode())
            raise RuntimeError("import failed")
    assert capfd.readouterr().err.splitlines() == [REAL]


def test_third_party_deprecation_notices_are_hidden_ours_are_not():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        quiet_startup.install()
        warnings.warn_explicit("pkg_resources is deprecated as an API.", UserWarning,
                               "__init__.py", 61, module="tensorflow_hub")
        warnings.warn_explicit("x is deprecated", DeprecationWarning, "ops.py", 1,
                               module="keras.src.ops")
        warnings.warn_explicit("our own notice", UserWarning, "run.py", 1,
                               module="albert_tf.finetuning.run")
    assert [str(w.message) for w in caught] == ["our own notice"]


def user_run(args: list[str]):
    """A script run as a user runs it: no TF_CPP_MIN_LOG_LEVEL in the environment."""
    env = processes.python_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel

    return subprocess.run([sys.executable, *args], cwd=processes.REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def assert_quiet(stderr: str) -> None:
    found = [line for line in stderr.splitlines() if any(m in line for m in NOISE_MARKERS)]
    assert not found, found


def test_help_of_a_script_that_imports_tensorflow_is_quiet():
    result = user_run(["-m", "albert_tf.plot_curves", "--helpshort"])
    assert "--event_dir" in result.stdout  # (absl's help exits with status 1)
    assert_quiet(result.stderr)


def test_tiny_pretraining_run_shows_only_its_own_log(tmp_path):
    config = str(tmp_path / "albert_config.json")
    tiny_config(vocab_size=100, max_position_embeddings=64).to_json_file(config)
    data = record_files.write(str(tmp_path / "data.tfrecord"), record_files.rows(16, 16, 4))
    result = user_run(["run_pretraining.py", f"--albert_config_file={config}",
                       f"--input_file={data}", f"--output_dir={tmp_path / 'out'}",
                       "--max_seq_length=16", "--max_predictions_per_seq=4",
                       "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=0",
                       "--save_checkpoints_steps=2", "--log_steps=1", "--do_eval",
                       "--eval_batch_size=4", "--max_eval_steps=1"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert_quiet(result.stderr)
    for own in ("Saved checkpoint for step 2", "masked_lm_accuracy"):
        assert own in result.stderr, own
