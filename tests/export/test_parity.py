"""The exports' parity bounds are said once (export/parity.py), and its one compare helper."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from albert_tf.export import parity

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "albert_tf"
# Where export and serving code lives (a serving/ package included, once it exists).
EXPORT_DIRS = ("export", "serving")
TOLERANCES = {"1e-05": parity.FLOAT32_TOLERANCE, "2**-5": parity.BF16_RELATIVE_TOLERANCE,
              "0.0001": parity.CONVERTED_FILE_TOLERANCE}


def _number(node: ast.AST) -> float | None:
    """The value of a literal number or of a literal power (2 ** -5), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = _number(node.left), _number(node.right)
        if base is not None and exponent is not None:
            return base ** exponent
    return None


def _modules_writing(value: float, package: pathlib.Path = PACKAGE_DIR) -> list[str]:
    """The export/serving modules whose code (not docstrings) holds `value` as a literal."""
    found = []
    for directory in EXPORT_DIRS:
        for path in sorted((package / directory).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            for node in ast.walk(tree):
                if isinstance(parents.get(node), (ast.BinOp, ast.UnaryOp)):
                    continue  # counted as part of its expression
                if _number(node) == value:
                    found.append(path.relative_to(package.parent).as_posix())
                    break
    return found


@pytest.mark.parametrize("literal", sorted(TOLERANCES))
def test_each_tolerance_is_written_in_one_module_only(literal):
    assert _modules_writing(TOLERANCES[literal]) == ["albert_tf/export/parity.py"], literal


def test_the_finder_sees_a_bare_literal(tmp_path):
    export = tmp_path / "albert_tf" / "export"
    export.mkdir(parents=True)
    (export / "a.py").write_text("BOUND = 2 ** -5\n")
    (export / "b.py").write_text("def f(x):\n    return x <= 1e-5 or x == 2.0 ** -5\n")
    package = tmp_path / "albert_tf"
    assert _modules_writing(2 ** -5, package) == ["albert_tf/export/a.py", "albert_tf/export/b.py"]
    assert _modules_writing(1e-5, package) == ["albert_tf/export/b.py"]


def test_max_difference_absolute_and_relative():
    want = {"a": np.array([1.0, -4.0], np.float32), "b": np.array([[0.5]], np.float32)}
    got = {"a": np.array([1.5, -4.0], np.float32), "b": np.array([[0.25]], np.float32),
           "extra": np.zeros(1)}
    assert parity.max_difference(got, want) == 0.5  # |1.5 − 1| and |0.25 − 0.5|
    # relative: 0.5 / 4 for "a", 0.25 / 0.5 for "b"
    assert parity.max_difference(got, want, relative=True) == 0.5
    assert parity.max_difference(got, want, relative=True, keys=["a"]) == 0.125


def test_model_tolerance_picks_the_bound_by_precision():
    assert parity.model_tolerance(relative=False) == 1e-5
    assert parity.model_tolerance(relative=True) == 2 ** -5
