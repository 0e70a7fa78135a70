"""What a user sees on stderr: TensorFlow's INFO/WARNING log lines and its known harmless
errors are filtered — on any CPU, oneDNN's ops on or off, for the whole run — the scripts'
own logs and real errors are not (albert_tf.runtime.quiet_startup, albert_tf.runtime.stderr_filter)."""

from __future__ import annotations

import ast
import glob
import os
import re
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest

from albert_tf.runtime import quiet_startup
from albert_tf.runtime.stderr_filter import LineFilter, keep
from tests.conftest import tiny_config
from tests.data import record_files
from tests.training import processes

PRE_INIT = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
ONEDNN_ON = (b"I0000 00:00:1795645160.032510    5076 port.cc:153] oneDNN custom operations are on. "
             b"You may see slightly different numerical results due to floating-point round-off "
             b"errors from different computation orders. To turn them off, set the environment "
             b"variable `TF_ENABLE_ONEDNN_OPTS=0`.")
CUDART = (b"I0000 00:00:1795418813.568358    9138 cudart_stub.cc:31] Could not find cuda drivers "
          b"on your machine, GPU will not be used.")
CPU_GUARD = (b"W1125 22:16:16.123456    9138 cpu_feature_guard.cc:227] This TensorFlow binary is "
             b"optimized to use available CPU instructions.")  # absl's format once initialised
CUINIT = (b"E0000 00:00:1795418828.789748    9138 cuda_platform.cc:52] failed call to cuInit: "
          b"INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)")
ONEDNN_INT64 = (b"E0000 00:00:1795418828.789748    9138 util.cc:131] oneDNN supports DT_INT64 only "
                b"on platforms with AVX-512. Falling back to the default Eigen-based "
                b"implementation if present.")
REAL = b"E0000 00:00:1795418828.789748    9138 op_kernel.cc:1857] OP_REQUIRES failed: disk full"
FATAL = b"F0000 00:00:1795418828.789748    9138 tensor.cc:730] Check failed: 1 == 2 (1 vs. 2)"
# Python absl lines (a child process's, reaching fd 2) carry the same prefix, from a .py file.
ABSL_PY = [b"I1125 22:16:16.123456 140 run_pretraining.py:12] step 10/20",
           b"W1125 22:16:16.123456 140 cli.py:12] a warning of ours",
           b"E1125 22:16:16.123456 140 cli.py:12] an error of ours"]
# A C++ log line (not from a .py file): severity letter, timestamp, thread, file:line].
TF_LOG_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ (\S+):\d+\] ")
NOISE_MARKERS = ("cuInit", "cudart_stub", "absl::InitializeLog", "oneDNN", "DeprecationWarning",
                 "UserWarning", "FutureWarning", "is deprecated", "Traceback",
                 "Sharding callback duration", "Writing fingerprint to", "contains input name(s)")


def test_tensorflow_info_and_warning_lines_are_dropped_errors_kept():
    for line in (PRE_INIT, ONEDNN_ON, CUDART, CPU_GUARD, ONEDNN_INT64):
        assert not keep(line + b"\n", nvidia_driver=True), line
        assert not keep(line, nvidia_driver=False), line
    assert not keep(CUINIT, nvidia_driver=False)
    assert keep(CUINIT, nvidia_driver=True)  # with a driver installed a failing cuInit is news
    for line in (REAL, FATAL, *ABSL_PY, b"Traceback (most recent call last):", b"",
                 b"I like this line", b"Epoch 1/3", b"    @ 0x7f3a0c2b1234  (unknown)"):
        assert keep(line + b"\n", nvidia_driver=False), line


def test_the_filter_gives_the_same_lines_whatever_the_pieces():
    stream = b"\n".join([PRE_INIT, ONEDNN_ON, b"kept 1", REAL, CUDART, ABSL_PY[0], ONEDNN_INT64,
                         FATAL, b"kept \r2"]) + b"\n"
    expected = b"\n".join([b"kept 1", REAL, ABSL_PY[0], FATAL, b"kept \r2"]) + b"\n"
    for size in (1, 7, 100, len(stream)):
        line_filter = LineFilter(nvidia_driver=False)
        out = b"".join(line_filter.feed(stream[at:at + size])
                       for at in range(0, len(stream), size)) + line_filter.end()
        assert out == expected, size


def test_a_line_that_cannot_be_a_log_line_is_passed_on_before_it_ends():
    line_filter = LineFilter(nvidia_driver=False)
    assert line_filter.feed(b"loading 10%\r") == b"loading 10%\r"  # progress stays live
    assert line_filter.feed(b"loading 20%\r") == b"loading 20%\r"
    assert line_filter.feed(b" done\n") == b" done\n"
    assert line_filter.feed(ONEDNN_ON[:60]) == b""  # a log line is held until its end ...
    assert not line_filter.waiting() and line_filter.release() == b""
    assert line_filter.feed(ONEDNN_ON[60:] + b"\n") == b""  # ... and dropped whole
    assert line_filter.feed(b"I") == b""  # may become a log line: held a moment ...
    assert line_filter.waiting() and line_filter.release() == b"I"  # ... then passed on
    assert line_filter.feed(b"ntermediate\n") == b"ntermediate\n"
    assert line_filter.feed(REAL[:30]) == b"" and line_filter.end() == REAL[:30]


def run_python(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -c code` as a user runs it (no TF_CPP_MIN_LOG_LEVEL unless given)."""
    environment = processes.python_env(**env)
    if "TF_CPP_MIN_LOG_LEVEL" not in env:
        environment.pop("TF_CPP_MIN_LOG_LEVEL")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          cwd=processes.REPO, env=environment, capture_output=True, timeout=120)


# A program of ours without TensorFlow: C++-style lines on fd 2, Python's own through sys.stderr.
PROGRAM = f"""
import os, subprocess, sys
import albert_tf.runtime.quiet_startup
os.write(2, {ONEDNN_ON!r} + b"\\n" + {REAL!r} + b"\\n" + {ONEDNN_INT64!r} + b"\\n")
os.write(2, {PRE_INIT!r} + b"\\n")
sys.stderr.write({CUDART.decode()!r} + " (through sys.stderr: a line of ours)\\n")
sys.stderr.flush()
subprocess.run([sys.executable, "-c", "import os; os.write(2, {CPU_GUARD!r} + b'\\\\nchild\\\\n')"])
mode = sys.argv[1]
if mode == "normal":
    print("flushed", albert_tf.runtime.quiet_startup.flush())
    sys.stderr.write("after the flush\\n")
if mode == "abort":
    os.write(2, {FATAL!r} + b"\\n*** Check failure stack trace: ***\\n")
    os.abort()
if mode == "_exit":
    os.write(2, {REAL!r} + b" (last words)\\n")
    os._exit(3)
if mode == "raise":
    raise ValueError("a real error")
"""


def test_a_program_shows_its_own_lines_and_real_errors_only():
    result = run_python(PROGRAM, "normal")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    # (Python's lines go straight out, fd 2's through the filter: their order is not fixed.)
    assert sorted(lines) == sorted([REAL, CUDART + b" (through sys.stderr: a line of ours)",
                                    b"child", b"after the flush"])
    assert lines.index(REAL) < lines.index(b"child")
    assert result.stdout == b"flushed True\n" and lines[-1] == b"after the flush"


@pytest.mark.parametrize("mode,status,last_words", [
    ("abort", -signal.SIGABRT, [FATAL, b"*** Check failure stack trace: ***"]),
    ("_exit", 3, [REAL + b" (last words)"]),
    ("raise", 1, [b"Traceback (most recent call last):", b"ValueError: a real error"]),
])
def test_the_last_words_of_a_dying_program_get_out(mode, status, last_words):
    result = run_python(PROGRAM, mode)
    assert result.returncode == status, result.stderr
    lines = result.stderr.splitlines()
    for line in last_words:
        assert line in lines, (line, result.stderr)
    assert not [line for line in lines if b"oneDNN" in line or b"cpu_feature_guard" in line]


def test_tf_cpp_min_log_level_0_or_1_shows_everything():
    for level in ("0", "1"):
        result = run_python(PROGRAM, "normal", TF_CPP_MIN_LOG_LEVEL=level)
        for line in (ONEDNN_ON, ONEDNN_INT64, PRE_INIT, CPU_GUARD, REAL):
            assert line in result.stderr.splitlines(), (level, line)


def test_the_program_gets_the_profiles_onednn_choice_unless_the_user_set_one():
    """A script (the program importing quiet_startup) gets TF_ENABLE_ONEDNN_OPTS from
    execution_rules' table for this CPU's profile before TensorFlow is imported; a value the
    user set is kept; a library import changes nothing."""
    from albert_tf.runtime import execution_rules, hardware

    show = "import os, albert_tf.runtime.quiet_startup; print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'))"
    expected = {True: "1", False: "0", None: "None"}[
        execution_rules.ONEDNN_ON[hardware.cpu_profile()]]
    environment = processes.python_env()
    environment.pop("TF_ENABLE_ONEDNN_OPTS", None)
    result = subprocess.run([sys.executable, "-c", show], cwd=processes.REPO, env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == expected, result.stderr
    for value in ("0", "1"):
        assert run_python(show, TF_ENABLE_ONEDNN_OPTS=value).stdout.strip() == value.encode()
    library = ("import importlib, os; importlib.import_module('albert_tf.runtime.quiet_startup'); "
               "print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'))")
    result = subprocess.run([sys.executable, "-c", library], cwd=processes.REPO, env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "None", result.stderr


def test_imported_as_a_library_it_leaves_stderr_alone():
    result = run_python("""
        import importlib, os
        importlib.import_module("albert_tf.runtime.quiet_startup")  # not the program's own import
        os.write(2, b"I0000 00:00:1.5 1 port.cc:153] shown\\n")
        """)
    assert result.stderr.splitlines() == [b"I0000 00:00:1.5 1 port.cc:153] shown"]


def test_a_console_script_wrapper_is_the_program_a_function_importing_a_tool_is_not():
    """pip's wrapper imports the tool at its top level (`from albert_tf.x import console_main`),
    which imports quiet_startup first: fd 2 is filtered from there on, before TensorFlow. A
    function (a test, a library) importing the same tool leaves stderr alone."""
    result = run_python("""
        from albert_tf.write_config import console_main
        import os
        os.write(2, b"I0000 00:00:1.5 1 port.cc:153] hidden\\n")
        os.write(2, b"E0000 00:00:1.5 1 port.cc:153] a real error\\n")
        """)
    assert result.stderr.splitlines() == [b"E0000 00:00:1.5 1 port.cc:153] a real error"]
    result = run_python("""
        import os
        def load():
            from albert_tf.write_config import console_main
        load()
        os.write(2, b"I0000 00:00:1.5 1 port.cc:153] shown\\n")
        """)
    assert result.stderr.splitlines() == [b"I0000 00:00:1.5 1 port.cc:153] shown"]


MAIN_TESTS = ("__name__ == '__main__'", "'__main__' == __name__")


def entry_points() -> list[str]:
    """Every command of ours: run_*.py and each albert_tf module run as a program."""
    files = glob.glob(os.path.join(processes.REPO, "run_*.py")) + glob.glob(
        os.path.join(processes.REPO, "albert_tf", "**", "*.py"), recursive=True)
    found = []
    for path in sorted(files):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        if any(isinstance(node, ast.If) and ast.unparse(node.test) in MAIN_TESTS
               for node in tree.body) and not path.endswith("stderr_filter.py"):
            found.append(path)  # (the filter itself runs on the standard library alone)
    return found


def test_every_entry_point_imports_quiet_startup_first():
    found = entry_points()
    assert len(found) >= 17 and any(p.endswith("albert_tf/convert.py") for p in found)
    for path in found:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                   and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
        first = imports[0]
        assert (isinstance(first, ast.Import)
                and [a.name for a in first.names] == ["albert_tf.runtime.quiet_startup"]), path


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


def user_run(args: list[str], onednn: str) -> subprocess.CompletedProcess:
    """A script run as a user runs it: no TF_CPP_MIN_LOG_LEVEL in the environment; oneDNN's
    ops on ("1", as TensorFlow's default on Intel CPUs) or off."""
    env = processes.python_env(TF_ENABLE_ONEDNN_OPTS=onednn)
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    return subprocess.run([sys.executable, *args], cwd=processes.REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def assert_quiet(stderr: str) -> None:
    """No line of TensorFlow's but errors that are news, no third-party notice."""
    for line in stderr.splitlines():
        assert not any(m in line for m in NOISE_MARKERS), line
        match = TF_LOG_LINE.match(line)
        if match and not match.group(2).endswith(".py"):
            assert match.group(1) in "EF" and keep(line.encode(), nvidia_driver=True), line


def test_help_of_a_script_that_imports_tensorflow_is_quiet():
    result = user_run(["-m", "albert_tf.plot_curves", "--helpshort"], onednn="1")
    assert "--event_dir" in result.stdout  # (absl's help exits with status 1)
    assert_quiet(result.stderr)


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_tiny_pretraining_run_shows_only_its_own_log(tmp_path, onednn):
    config = str(tmp_path / "albert_config.json")
    tiny_config(vocab_size=100, max_position_embeddings=64).to_json_file(config)
    data = record_files.write(str(tmp_path / "data.tfrecord"), record_files.rows(16, 16, 4))
    result = user_run(["run_pretraining.py", f"--albert_config_file={config}",
                       f"--input_file={data}", f"--output_dir={tmp_path / 'out'}",
                       "--max_seq_length=16", "--max_predictions_per_seq=4",
                       "--train_batch_size=4", "--num_train_steps=2", "--num_warmup_steps=0",
                       "--save_checkpoints_steps=2", "--log_steps=1", "--do_eval",
                       "--eval_batch_size=4", "--max_eval_steps=1"], onednn)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_quiet(result.stderr)
    for own in ("Saved checkpoint for step 2", "masked_lm_accuracy"):
        assert own in result.stderr, own


@pytest.fixture(scope="module")
def released_layout(tmp_path_factory):
    """albert_config.json and model.ckpt-best of a tiny model, as the released tarballs."""
    from albert_tf import checkpoints
    from albert_tf.models import AlbertPretrainer
    from tests.conftest import random_inputs

    root = tmp_path_factory.mktemp("released")
    config = tiny_config()
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    checkpoints.save_original_checkpoint(model, str(root / "model.ckpt-best"), global_step=1)
    config.to_json_file(root / "albert_config.json")
    return root


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_checkpoint_tools_show_their_report_and_real_errors_only(released_layout, tmp_path,
                                                                 onednn):
    """export_checkpoints and convert, which skipped the quiet start once: the report in
    export_checkpoints' log and nothing of TensorFlow's on stderr; a bad input (convert starts TensorFlow
    before it reads it) is the one line it should be."""
    result = user_run(["-m", "albert_tf.export_checkpoints",
                       f"--albert_directory={released_layout}",
                       f"--export_path={tmp_path}/export/model.ckpt"], onednn)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "restored" in result.stderr and result.stdout == ""  # its log, not a second print
    assert_quiet(result.stderr)
    result = user_run(["-m", "albert_tf.convert", f"--input={tmp_path}/nothing_here",
                       f"--output={tmp_path}/out", "--to=original"], onednn)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("convert: error: "), result.stderr
    assert f"{tmp_path}/nothing_here" in lines[0]


def test_fd_2_pointed_elsewhere_by_the_program_gets_nothing_of_the_filter(tmp_path):
    """(The flush at exit writes its mark to the filter's pipe only, never into a file.)"""
    log = tmp_path / "log.txt"
    result = run_python(f"""
        import os
        import albert_tf.runtime.quiet_startup
        fd = os.open({str(log)!r}, os.O_WRONLY | os.O_CREAT)
        os.dup2(fd, 2)
        os.write(2, b"into the file\\n")
        """)
    assert result.returncode == 0 and result.stderr == b""
    assert log.read_bytes() == b"into the file\n"


def test_tensorflow_records_filter_keeps_ours_logged_through_autograph():
    """TensorFlow's own INFO records are dropped; ours stay, also when AutoGraph (inside a
    tf.function) is the frame absl names as the caller."""
    import logging as std_logging

    from albert_tf.runtime.quiet_startup import LibraryRecords

    records_filter = LibraryRecords(std_logging.ERROR, ("tensorflow",))
    root = records_filter.prefixes[0]

    def record(pathname: str, level: int = std_logging.INFO) -> std_logging.LogRecord:
        return std_logging.LogRecord("absl", level, pathname, 1, "message", None, None)

    saver = os.path.join(root, "python", "checkpoint", "functional_saver.py")
    autograph = os.path.join(root, "python", "autograph", "impl", "api.py")
    assert not records_filter.filter(record(saver))
    assert records_filter.filter(record(saver, std_logging.ERROR))
    assert records_filter.filter(record(autograph))
    assert records_filter.filter(record(os.path.abspath(__file__)))


def test_absl_handler_taken_off_the_root_logger_is_put_back():
    """Issue 28: OpenVINO's converter takes absl's handler off the root logger when imported;
    absl's next line then set up Python's default handler, so every later line read
    `INFO:absl:…` and library records (ONNX Runtime's quantizer, through the root logger)
    passed unfiltered. A tool's log keeps absl's format throughout and drops the library's
    lines; its own root-logger lines stay."""
    result = run_python("""
        import albert_tf.runtime.quiet_startup
        import importlib.util, logging, os
        from absl import app, logging as absl_logging

        library = importlib.util.find_spec("tensorflow").submodule_search_locations[0]

        def main(argv):
            absl_logging.info("ours before")
            logging.getLogger().removeHandler(absl_logging.get_absl_handler())  # as OpenVINO
            absl_logging.info("ours after")
            exec(compile("import logging; logging.info('a library line')",
                         os.path.join(library, "fake_quantizer.py"), "exec"))
            logging.getLogger("albert_tf.other").info("another logger's line")
            logging.warning("a root line of ours")

        app.run(main)
        """)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    lines = result.stderr.decode().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [
        "ours before", "ours after", "another logger's line", "a root line of ours"]
    for line in lines:
        assert re.match(r"^[IW]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ <string>:\d+\] ", line), line
