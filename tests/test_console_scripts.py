"""Every console script pyproject.toml declares points at a function that exists, takes no
argument (what pip's wrapper calls), and answers `--help` with its tool's flags and exit 0;
every command-line module at the package's top level has one."""

from __future__ import annotations

import ast
import inspect
import pathlib
import tomllib

import pytest

from tests.in_process_tools import run_tool
from tests.test_help_flags import TOOLS, listed

REPO = pathlib.Path(__file__).resolve().parents[1]


def declared_scripts() -> dict[str, str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


SCRIPTS = declared_scripts()


def test_every_top_level_tool_has_a_console_script():
    """A module of albert_tf/ that runs as `python -m albert_tf.<tool>` (through `cli.start`)
    is declared too."""
    tools = {f"albert_tf.{path.stem}" for path in (REPO / "albert_tf").glob("*.py")
             if "cli.start(" in path.read_text(encoding="utf-8")}
    declared = {target.partition(":")[0] for target in SCRIPTS.values()}
    assert tools, "found no command-line module at albert_tf/'s top level"
    assert tools <= declared, f"no console script for {sorted(tools - declared)}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_target_exists_and_takes_no_argument(script):
    """Read from the source (importing every tool into one process would define their flags
    twice): a top-level function whose parameters all have defaults."""
    module_name, _, function_name = SCRIPTS[script].partition(":")
    path = REPO.joinpath(*module_name.split(".")).with_suffix(".py")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    if function_name not in functions and "cli.FineTuningScript(" in source:
        # `run, main, console_main = _SCRIPT.run, …`: FineTuningScript.console_main(self).
        assigned = {element.id for node in tree.body if isinstance(node, ast.Assign)
                    for target in node.targets
                    for element in (target.elts if isinstance(target, ast.Tuple) else [target])
                    if isinstance(element, ast.Name)}
        assert function_name in assigned, f"{script} -> {SCRIPTS[script]}: no such name"
        from albert_tf.cli import FineTuningScript

        assert list(inspect.signature(FineTuningScript.console_main).parameters) == ["self"]
        return
    assert function_name in functions, f"{script} -> {SCRIPTS[script]}: no such function"
    arguments = functions[function_name].args
    required = (len(arguments.posonlyargs) + len(arguments.args) - len(arguments.defaults)
                + sum(default is None for default in arguments.kw_defaults))
    assert required == 0, f"{script} -> {SCRIPTS[script]} needs {required} argument(s)"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_help_exits_0_and_lists_the_tool_flags(script):
    """As pip's wrapper runs it: argv[0] the script's name, the function called bare (in
    this process, each tool imported afresh with only absl's flags defined: what a process
    of its own gives; tests/test_help_flags.py starts the real processes)."""
    module_name, _, function_name = SCRIPTS[script].partition(":")
    assert function_name == "console_main"  # what run_tool calls
    result = run_tool(module_name, "--help", program=script)
    assert result.status == 0, result.stderr[-2000:]
    missing = [flag for flag in TOOLS[module_name] if not listed(flag, result.stdout)]
    assert not missing, f"{script} --help does not list {missing}:\n{result.stdout[-2000:]}"
