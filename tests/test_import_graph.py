"""The package's import graph has no cycle, counting imports hidden inside functions.

An import that has to hide in a function to dodge a cycle means something lives on the wrong
floor (DESIGN.md). The graph is read from the source text with `ast`, so it sees every `import`
statement, wherever it sits, without running any of them.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = "albert_tf"
PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1] / PACKAGE


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, pathlib.Path]) -> str | None:
    """The longest known module that `name` (a dotted import target) names or lies in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports_of(module: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """Every package module that `module` imports, at top level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from a.b import c` may import the submodule a.b.c or a name inside a.b.
            targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for target in targets:
            if target.split(".")[0] != PACKAGE:
                continue
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def _module_graph() -> dict[str, set[str]]:
    modules = _all_modules()
    return {name: _imports_of(name, path, modules) for name, path in modules.items()}


def _floor(module: str) -> str:
    """The first-level package or top-level module that `module` belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _floor_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    floors: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = floors.setdefault(_floor(module), set())
        edges.update(_floor(t) for t in targets if _floor(t) != _floor(module))
    return floors


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _describe(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    edges = [
        f"{source} -> {target}"
        for source in component
        for target in sorted(graph[source] & members)
    ]
    return "; ".join(edges)


def test_the_finder_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The reader itself: a hidden import and a relative import both become edges."""
    global PACKAGE_DIR
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from albert_tf.sub import b\n")
    (package / "sub" / "b.py").write_text("from .. import a\nimport os\n")
    saved = PACKAGE_DIR
    PACKAGE_DIR = package
    try:
        graph = _module_graph()
    finally:
        PACKAGE_DIR = saved
    assert graph["albert_tf.a"] == {"albert_tf.sub.b"}
    assert graph["albert_tf.sub.b"] == {"albert_tf.a"}
    assert _cycles(graph) == [["albert_tf.a", "albert_tf.sub.b"]]


@pytest.mark.parametrize("level", ["module", "floor"])
def test_no_import_cycle(level):
    """No cycle between modules, nor between the package's floors (first-level packages)."""
    graph = _module_graph()
    assert len(graph) > 50, "the finder read too few modules to be looking at the package"
    if level == "floor":
        graph = _floor_graph(graph)
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)
