"""The two tiers stay honest: every test the slow table names exists, and the fast tier still
reaches every module of the package.

`make test` runs the tests not marked `slow`; whole slow files say so with a module-level
`pytestmark`, single slow tests are listed in `tests/slow_tests.py` with the fast test that covers
their module. Read with `ast`, without collecting or running anything.
"""

from __future__ import annotations

import ast
import pathlib
import re

from tests.run_order import LONGEST_FIRST
from tests.slow_tests import SLOW_TESTS
from tests.test_import_graph import PACKAGE, _all_modules, _imports_of, _module_graph

TESTS = pathlib.Path(__file__).resolve().parent
REPO = TESTS.parent
WHOLE_FILE_SLOW = re.compile(r"^pytestmark = pytest\.mark\.slow", re.M)
MODULE_MENTION = re.compile(rf"\b{PACKAGE}(?:\.\w+)+")
SCRIPT_MENTION = re.compile(r"\b(run_\w+|create_pretraining_data|export_tfhub)\.py\b")


def _test_functions(path: pathlib.Path) -> dict[str, bool]:
    """{test function name: whether it is parametrized} of one test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            found[node.name] = any("parametrize" in ast.unparse(d) for d in node.decorator_list)
    return found


def test_every_slow_key_names_a_test_and_says_what_covers_it():
    for key, reason in SLOW_TESTS.items():
        file, _, name = key.partition("::")
        path = REPO / file
        assert path.is_file(), f"tests/slow_tests.py: no file {file}"
        function, _, params = name.partition("[")
        functions = _test_functions(path)
        assert function in functions, f"tests/slow_tests.py: {file} has no {function}"
        assert not params or functions[function], f"{key}: {function} is not parametrized"
        assert not WHOLE_FILE_SLOW.search(path.read_text(encoding="utf-8")), (
            f"{key}: its whole file is slow already")
        assert "fast" in reason or reason.endswith("as above"), (
            f"{key}: say which fast test covers its module")


def test_every_file_of_the_run_order_exists_once():
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), "tests/run_order.py: a file twice"
    for file in LONGEST_FIRST:
        assert (REPO / file).is_file(), f"tests/run_order.py: no file {file}"


def _fast_test_files() -> list[pathlib.Path]:
    return [path for path in sorted(TESTS.rglob("*.py"))
            if not WHOLE_FILE_SLOW.search(path.read_text(encoding="utf-8"))]


def test_the_fast_tier_reaches_every_module():
    """Each package module is imported by a fast test file, or by a module one imports (the
    scripts a test runs count as imported). A module only slow tests reach is uncovered by
    `make test`."""
    graph = _module_graph()
    modules = _all_modules()
    reached: set[str] = set()
    for path in _fast_test_files():
        text = path.read_text(encoding="utf-8")
        reached |= _imports_of("tests", path, modules)
        for mention in MODULE_MENTION.findall(text):
            while mention and mention not in graph:
                mention = mention.rpartition(".")[0]
            if mention:
                reached.add(mention)
        for script in SCRIPT_MENTION.findall(text):
            if f"{PACKAGE}.{script}" in graph:
                reached.add(f"{PACKAGE}.{script}")
    for name, path in modules.items():  # a package's lazily imported names (lazy_names)
        if path.name == "__init__.py":
            constants = {node.value for node in ast.walk(ast.parse(path.read_text("utf-8")))
                         if isinstance(node, ast.Constant) and isinstance(node.value, str)}
            graph[name] |= {f"{name}.{c}" for c in constants if f"{name}.{c}" in graph}
    for name in list(reached):  # importing a module runs its packages' __init__
        while "." in name:
            name = name.rpartition(".")[0]
            reached.add(name)
    frontier = list(reached)
    while frontier:
        for target in graph[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    missing = sorted(set(graph) - reached - {PACKAGE})
    assert not missing, "modules no fast test reaches: " + ", ".join(missing)
