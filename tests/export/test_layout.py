"""Every export file name and directory is said once, in albert_tf/export/layout.py: no other
module of the package spells one as a string (docstrings aside), names one in a module-level
constant, or joins one into a path. Read from the source with `ast`, as test_import_graph.py does.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from albert_tf.export import layout

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "albert_tf"
LAYOUT = PACKAGE_DIR / "export" / "layout.py"


def _layout_names() -> dict[str, str]:
    """layout.py's upper-case string constants (its own and those it takes from a lower floor):
    value → constant name."""
    return {value: name for name, value in vars(layout).items()
            if name.isupper() and isinstance(value, str)}


def _homes() -> dict[pathlib.Path, set[str]]:
    """The modules layout.py takes a name from, with the values they may spell (define)."""
    homes: dict[pathlib.Path, set[str]] = {}
    for node in ast.parse(LAYOUT.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module.startswith("albert_tf."):
            path = PACKAGE_DIR.parent.joinpath(*node.module.split(".")).with_suffix(".py")
            homes[path] = {getattr(layout, alias.asname or alias.name) for alias in node.names}
    return homes


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def spellings(source: str, names: dict[str, str]) -> list[str]:
    """Where `source` spells a layout name: a file name (it has a dot) as any string, a directory
    name as a module-level constant's value or an argument of a `*.join(...)` call."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                and node.value in names and "." in node.value):
            found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "join":
            found += [f"line {arg.lineno}: {arg.value!r} joined" for arg in node.args
                      if isinstance(arg, ast.Constant) and arg.value in names]
    for node in tree.body:  # X = "serving" outside layout.py: a second definition
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and node.value.value in names):
            found.append(f"line {node.lineno}: {node.value.value!r} assigned")
    return sorted(set(found))


def test_layout_declares_every_artifact_name():
    names = _layout_names()
    for value in ("serving.json", "serving", "saved_model.pb", "saved_model", "albert_model.tflite",
                  "albert_encoder.tflite", "openvino", "albert_encoder.xml", "albert_model.xml",
                  "albert_encoder_int8.xml", "albert_model_int8.xml", "onnx",
                  "albert_encoder.onnx", "albert_encoder_int8.onnx",
                  "albert_encoder_int8_vnni.onnx", "albert_model.onnx"):
        assert value in names, value
        assert getattr(layout, names[value]) == value


@pytest.mark.parametrize("source, expected", [
    ('SERVING_DIR = "serving"\n', ["line 1: 'serving' assigned"]),
    ('import os\np = os.path.join(d, "openvino", f)\n', ["line 2: 'openvino' joined"]),
    ('def f():\n    """Writes albert_model.tflite."""\n    return "albert_model.tflite"\n',
     ["line 3: 'albert_model.tflite'"]),
    ('ENGINE = {"openvino": 1}\nx = "a.tflite"\n', []),  # a key, a name not of the layout
])
def test_the_scan_finds_a_second_spelling(source, expected):
    assert spellings(source, _layout_names()) == expected


def test_no_other_module_spells_an_artifact_name():
    names, homes = _layout_names(), _homes()
    offenders = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path == LAYOUT:
            continue
        others = {value: name for value, name in names.items()
                  if value not in homes.get(path, set())}
        found = spellings(path.read_text(encoding="utf-8"), others)
        if found:
            offenders[str(path.relative_to(PACKAGE_DIR.parent))] = found
    assert offenders == {}, ("export file names belong in albert_tf/export/layout.py; "
                             f"spelled elsewhere: {offenders}")


def test_task_saved_model_reads_both_layouts(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    (old / layout.SAVED_MODEL_PB).write_bytes(b"")  # a GLUE export of an earlier release
    (new / layout.TASK_SAVED_MODEL_DIR).mkdir(parents=True)
    (new / layout.TASK_SAVED_MODEL_DIR / layout.SAVED_MODEL_PB).write_bytes(b"")
    assert layout.task_saved_model(str(old)) == str(old)
    assert layout.task_saved_model(str(new)) == str(new / layout.TASK_SAVED_MODEL_DIR)
