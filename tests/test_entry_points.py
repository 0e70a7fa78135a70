"""Every command-line entry point is thin and leaves through the one error path (issue 22).

Read from the source with `ast`: an entry point is a module with an `if __name__ ==
"__main__":` block. Each must reach `cli.run_script` (directly or through `cli.start`), and the
command-line tools at the package's top level and the run_*.py scripts keep at most
`MAX_OWN_LINES` lines of their own logic: docstrings, comments, imports and flag definitions
do not count, since a tool's flags are its interface, not its logic. The top-level run_*.py
are shims: their `__main__` block calls the `console_main` of albert_tf/run_*.py, which an
installed package runs as `albert-run-*` and `python -m albert_tf.run_*`.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
MAX_OWN_LINES = 60
LIBRARY_MODULES = {"__init__", "atomic_files", "cli", "config", "flag_errors", "hardware",
                   "lazy_names", "model_source", "options", "quiet_startup",
                   "stderr_filter", "tokenization"}


def _main_blocks(tree: ast.Module) -> list[ast.If]:
    return [node for node in tree.body
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]


def _has_main_block(tree: ast.Module) -> bool:
    return bool(_main_blocks(tree))


def shim_target(tree: ast.Module) -> str | None:
    """The package module a shim runs: its one `__main__` block only calls `console_main()`,
    imported from that module (`from albert_tf.run_x import console_main`); else None."""
    blocks = _main_blocks(tree)
    if len(blocks) != 1 or [ast.unparse(node) for node in blocks[0].body] != ["console_main()"]:
        return None
    for node in tree.body:
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("albert_tf.")
                and any(alias.name == "console_main" and alias.asname is None
                        for alias in node.names)):
            return node.module
    return None


def _entry_points() -> list[pathlib.Path]:
    candidates = sorted((REPO / "albert_tf").rglob("*.py")) + sorted(REPO.glob("run_*.py"))
    found = []
    for path in candidates:
        if path.stem in ("cli", "stderr_filter", "quiet_startup"):
            continue  # the error path itself and the log filter's own child process
        if _has_main_block(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(path)
    return found


def _thin_scripts() -> list[pathlib.Path]:
    tools = [p for p in sorted((REPO / "albert_tf").glob("*.py")) if p.stem not in LIBRARY_MODULES]
    return tools + sorted(REPO.glob("run_*.py"))


def own_logic_lines(source: str) -> int:
    """Non-blank lines that are not comments, docstrings, imports or flag definitions."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            skipped.update(range(body[0].lineno, body[0].end_lineno + 1))
    for node in tree.body:
        is_import = isinstance(node, (ast.Import, ast.ImportFrom))
        is_flag = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                   and ".DEFINE_" in f".{ast.unparse(node.value.func)}")
        if is_import or is_flag:
            skipped.update(range(node.lineno, node.end_lineno + 1))
    return sum(1 for number, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in skipped)


def test_the_counter_skips_docstrings_imports_and_flags_only():
    source = ('"""Doc."""\nimport os\nfrom absl import flags\n\n'
              'flags.DEFINE_string("a", None,\n                    "help")\n'
              '# a comment\n\ndef main():\n    """Doc."""\n    x = 1\n    return x\n')
    assert own_logic_lines(source) == 3  # def main, x = 1, return x


def test_every_entry_point_was_found():
    names = {p.stem for p in _entry_points()}
    assert {"run_classifier", "run_pretraining", "run_squad", "run_race", "export_tfhub",
            "convert", "create_pretraining_data", "paper"} <= names


@pytest.mark.parametrize("path", _entry_points(), ids=lambda p: str(p.relative_to(REPO)))
def test_entry_point_exits_through_the_one_error_path(path):
    source = path.read_text(encoding="utf-8")
    target = shim_target(ast.parse(source))
    if target is not None:  # a shim: the module it runs is the entry point to check
        path = REPO.joinpath(*target.split(".")).with_suffix(".py")
        source = path.read_text(encoding="utf-8")
    # cli.FineTuningScript's main and console_main are cli.run_script and cli.start.
    assert any(call in source for call in ("cli.run_script(", "cli.start(",
                                           "cli.FineTuningScript(")), (
        f"{path.relative_to(REPO)}: its main does not go through cli.run_script / cli.start")
    assert "sys.exit(1)" not in source, f"{path.relative_to(REPO)}: an error exit of its own"


@pytest.mark.parametrize("path", sorted(REPO.glob("run_*.py")), ids=lambda p: p.name)
def test_top_level_script_is_a_shim_over_its_package_module(path):
    """`python run_x.py` (the original's command) runs albert_tf/run_x.py, as the installed
    `albert-run-x` and `python -m albert_tf.run_x` do: one copy of the flags and the code."""
    source = path.read_text(encoding="utf-8")
    assert shim_target(ast.parse(source)) == f"albert_tf.{path.stem}", path.name
    assert own_logic_lines(source) <= 3, f"{path.name}: more than a shim"


@pytest.mark.parametrize("path", _thin_scripts(), ids=lambda p: p.name)
def test_command_line_module_is_thin(path):
    lines = own_logic_lines(path.read_text(encoding="utf-8"))
    assert lines <= MAX_OWN_LINES, (
        f"{path.name}: {lines} lines of its own logic; the library half belongs on its floor")
