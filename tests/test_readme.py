"""Every README code block marked `<!-- runnable -->` runs, so the README cannot rot."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"<!-- runnable -->\s*\n```(\w+)\n(.*?)```", re.S)


def runnable_blocks() -> list[tuple[str, str]]:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        return BLOCK.findall(f.read())


def test_readme_has_runnable_blocks():
    assert len(runnable_blocks()) >= 2


@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_runnable_block(index, tmp_path):
    language, code = runnable_blocks()[index]
    command = {"python": [sys.executable, "-c", code], "bash": ["bash", "-euo", "pipefail", "-c", code]}
    assert language in command, f"block {index}: cannot run {language!r}"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": REPO}
    result = subprocess.run(command[language], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"README block {index} failed:\n{code}\n{result.stderr[-3000:]}"
