"""Every console script pyproject.toml declares points at a function that exists, takes no
argument (what pip's wrapper calls), and answers `--help` with its tool's flags and exit 0;
every command-line module at the package's top level has one."""

from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def declared_scripts() -> dict[str, str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


SCRIPTS = declared_scripts()


def test_every_top_level_tool_has_a_console_script():
    """A module of albert_tf/ that runs as `python -m albert_tf.<tool>` is declared too."""
    tools = {f"albert_tf.{path.stem}" for path in (REPO / "albert_tf").glob("*.py")
             if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")}
    declared = {target.partition(":")[0] for target in SCRIPTS.values()}
    assert tools, "found no command-line module at albert_tf/'s top level"
    assert tools <= declared, f"no console script for {sorted(tools - declared)}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_target_exists_and_takes_no_argument(script):
    module_name, _, function_name = SCRIPTS[script].partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert not required, f"{script} -> {SCRIPTS[script]} needs {required}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_help_exits_0_and_lists_the_tool_flags(script):
    """As pip's wrapper runs it: argv[0] the script's name, the function called bare."""
    module_name, _, function_name = SCRIPTS[script].partition(":")
    code = (f"import sys; sys.argv = [{script!r}, '--help']; "
            f"from {module_name} import {function_name}; sys.exit({function_name}())")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    # absl groups --help by the module that defined each flag.
    assert f"{module_name}:" in result.stdout, result.stdout[-2000:]
