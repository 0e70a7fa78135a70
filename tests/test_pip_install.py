"""A pip user's path: the wheel, installed into a fresh virtual environment, runs the main job
with console scripts from an empty directory, with no clone on sys.path (issue 29).

The commands are the README's "Installed with pip" block, run one by one with smaller sizes
(`SUBSTITUTIONS`: each must match, so a README change cannot silently skip one):

1. The wheel is built from a copy of the sources (`pyproject.toml`, `README.md`, `albert_tf/`)
   with `pip wheel --no-deps --no-build-isolation --no-index`: the build backend of the
   environment running this test, nothing downloaded, nothing written into the clone. The
   README's wheel name must be the one built.
2. `python -m venv` makes a fresh environment, and its own pip runs the README's
   `pip install <wheel>` in the empty directory the wheel was copied to (plus `--no-deps
   --no-index`; not `-e`), so the console scripts are the bin/ wrappers pip writes.
3. The runtime requirements (TensorFlow and the rest: gigabytes and minutes from PyPI) are
   lent by the environment running this test, once the wheel is in (so pip saw a bare venv): a
   `.pth` file in the fresh venv's site-packages names this environment's site-packages. Python
   processes `.pth` files only in the venv's own site directories, not in the directories they
   add, so this environment's own `.pth` files — the editable install's finder that maps
   `albert_tf` to the clone among them — never run there. The test asserts that `import
   albert_tf` in the venv is the wheel's copy and that the clone is not on its sys.path.
4. From an empty directory outside the clone, with PATH as an activated venv's and no
   PYTHONPATH, each command must be a console script of the venv's bin/, exit 0, and leave no
   TensorFlow INFO/WARNING (or known harmless) line on stderr.

About 1.5–2 minutes on 2 CPU cores (a few seconds of it the wheel and the venv).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import time

import pytest

from albert_tf.runtime import stderr_filter
from tests.test_readme import readme_sections

# Slow tier (make test-all): builds the wheel and installs it into a fresh venv (≈2.5 min);
# tests/test_console_scripts.py checks the entry points fast.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = "Installed with pip"
NVIDIA_DRIVER = os.path.exists("/proc/driver/nvidia/version")
# The steps of the main job the README's block must take, each by its console script.
STEPS = ("albert-build-corpus", "albert-train-sentencepiece", "albert-create-pretraining-data",
         "albert-write-config", "albert-run-pretraining", "albert-make-glue-task",
         "albert-run-classifier", "albert-export-tfhub", "albert-classify-with-exports")
SUBSTITUTIONS = (
    ("--output=corpus.txt", "--output=corpus.txt --max_documents=60"),
    ("--dupe_factor=2", "--dupe_factor=1"),
    ("--train_batch_size=64", "--train_batch_size=8"),
    ("--num_train_steps=2000 --num_warmup_steps=200", "--num_train_steps=5 --num_warmup_steps=1"),
    ("--save_checkpoints_steps=2000", "--save_checkpoints_steps=5"),
    ("--num_train=8000 --num_dev=400 --num_test=100", "--num_train=64 --num_dev=16 --num_test=8"),
    ("--train_batch_size=32 --learning_rate=3e-4 --train_step=400 --warmup_step=40 "
     "--save_checkpoints_steps=400",
     "--train_batch_size=8 --learning_rate=3e-4 --train_step=4 --warmup_step=1 "
     "--save_checkpoints_steps=4"),
)
INSTALL = re.compile(r"pip install (albert_tf-\S+\.whl)")


def readme_commands() -> list[str]:
    """The commands of the README's pip block, continuation lines joined, in order."""
    (language, code), = readme_sections()[HEADING]
    assert language == "bash"
    for old, new in SUBSTITUTIONS:
        assert old in code, f"README {HEADING!r}: substitution target not found: {old!r}"
        code = code.replace(old, new)
    return [line.strip() for line in code.replace("\\\n", " ").splitlines() if line.strip()]


def build_wheel(sources: str, dist: str) -> str:
    """The wheel of a copy of the package's sources (the clone stays untouched)."""
    os.makedirs(sources)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), sources)
    shutil.copytree(os.path.join(REPO, "albert_tf"), os.path.join(sources, "albert_tf"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", dist, sources],
                   check=True, capture_output=True, text=True, timeout=300)
    wheels = os.listdir(dist)
    assert len(wheels) == 1 and wheels[0].endswith(".whl"), wheels
    return os.path.join(dist, wheels[0])


def lend_runtime_packages(venv_python: str) -> None:
    """A .pth in the venv's site-packages naming this environment's site-packages (whose own
    .pth files, e.g. the editable finder of albert_tf, are not processed there)."""
    target = subprocess.run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            check=True, capture_output=True, text=True).stdout.strip()
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
             *site.getsitepackages()]
    lent = dict.fromkeys(os.path.realpath(path) for path in paths if os.path.isdir(path))
    with open(os.path.join(target, "_lent_runtime_packages.pth"), "w", encoding="utf-8") as f:
        f.write("".join(f"{path}\n" for path in lent))


def noise(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if not stderr_filter.keep(line.encode(), NVIDIA_DRIVER)]


def test_the_readme_pip_block_runs_from_the_installed_wheel(tmp_path):
    commands = readme_commands()
    install = INSTALL.fullmatch(commands[0])
    assert install, f"README {HEADING!r}: the block does not start with `pip install <wheel>`"
    programs = [shlex.split(command, comments=True)[0] for command in commands[1:]]
    assert set(STEPS) <= set(programs), f"README {HEADING!r} lacks {set(STEPS) - set(programs)}"

    started = time.monotonic()
    wheel = build_wheel(str(tmp_path / "sources"), str(tmp_path / "dist"))
    assert os.path.basename(wheel) == install.group(1), (
        f"README {HEADING!r} installs {install.group(1)}, the build makes {os.path.basename(wheel)}")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bin_dir = str(venv / "bin")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k not in ("VIRTUAL_ENV", "TF_CPP_MIN_LOG_LEVEL")}
    env.update(PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]), VIRTUAL_ENV=str(venv))
    work = tmp_path / "work"  # empty, outside the clone
    work.mkdir()
    assert not str(work).startswith(REPO + os.sep)

    def run(command: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout)

    shutil.copy(wheel, work)  # the wheel a pip user has (the README's file name, checked above)
    result = run(f"{commands[0]} --quiet --no-deps --no-index")
    assert result.returncode == 0, result.stdout + result.stderr
    os.remove(work / os.path.basename(wheel))
    lend_runtime_packages(str(venv / "bin" / "python"))
    where = run("python -c 'import albert_tf, sys; print(albert_tf.__file__); print(*sys.path, sep=chr(10))'")
    assert where.returncode == 0, where.stderr
    module, *path = where.stdout.splitlines()
    assert module.startswith(str(venv) + os.sep), f"albert_tf imported from {module}, not the wheel"
    assert os.path.realpath(REPO) not in [os.path.realpath(p or work) for p in path], path
    timings = [f"wheel + venv + install: {time.monotonic() - started:.0f} s"]

    for command, program in zip(commands[1:], programs):
        assert shutil.which(program, path=env["PATH"]) == os.path.join(bin_dir, program), (
            f"{program} is not a console script of the venv")
        started = time.monotonic()
        result = run(command)
        timings.append(f"{program}: {time.monotonic() - started:.0f} s")
        assert result.returncode == 0, (f"README {HEADING!r}: failed in the venv:\n{command}\n"
                                        f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
        assert not noise(result.stderr), (f"{program}: TensorFlow's INFO/WARNING or "
                                          "known-harmless lines reached stderr:\n"
                                          + "\n".join(noise(result.stderr)[:10]))
    print("\n".join(timings))
    assert "correctly through the exports" in result.stdout  # the reload classified pairs
