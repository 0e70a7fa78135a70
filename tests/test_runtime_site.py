"""The tests' subprocesses run as a runtime install does: without scikit-learn, which only the
test environment has (tests/runtime_site/sklearn), and TensorFlow with Keras still imports."""

from __future__ import annotations

import subprocess
import sys

from tests.training.processes import python_env, run


def test_scikit_learn_is_hidden_from_subprocesses_that_set_or_inherit_the_path():
    probe = "import importlib.util, sys; import sklearn"
    for env in (python_env(), None):  # processes' own environment; one inherited from conftest
        result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines()[-1] == (
            "ImportError: scikit-learn is hidden from the tests' subprocesses (tests/runtime_site)")


def test_keras_and_a_tool_import_without_it():
    result = run(["-c", "import sys, keras, albert_tf.run_classifier; "
                        "print('sklearn' in sys.modules, 'keras.src.wrappers' in sys.modules)"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "True"]
