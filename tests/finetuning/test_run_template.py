"""The one fine-tuning run template: tasks fill in hooks, never the set-up or the phases, and
every task package names its modules by role (issue 22)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import types

import pytest
import tensorflow as tf

from albert_tf.finetuning.run import FineTuningRun

# Written once in the template; a task that overrides one of these has copied the sequence.
TEMPLATE_ONLY = ("__init__", "prepare", "check_options", "run", "setup", "train", "evaluate", "warm_start",
                 "load_initial_weights", "load_best_weights", "length_buckets")
TASK_RUNS = {"glue": "GlueRun", "squad": "SquadRun", "race": "RaceRun"}
# Role → module, in every task package (RACE has no export).
ROLES = ("examples", "features", "records", "modeling", "metrics", "runner")


@pytest.mark.parametrize("package", sorted(TASK_RUNS))
def test_task_runs_override_hooks_only(package):
    module = importlib.import_module(f"albert_tf.{package}.runner")
    run_class = getattr(module, TASK_RUNS[package])
    assert issubclass(run_class, FineTuningRun)
    copied = [name for name in TEMPLATE_ONLY if name in vars(run_class)]
    assert not copied, f"{run_class.__name__} redefines the template's {copied}"
    assert not getattr(run_class, "__abstractmethods__", None)  # every hook supplied


# Pretraining's examples and features are the pretraining data (`albert_tf.data`, written by
# create_pretraining_data); it has the roles from records on, under the same names.
PACKAGE_ROLES = {"glue": ROLES + ("export",), "squad": ROLES + ("export",), "race": ROLES,
                 "pretraining": ("records", "modeling", "metrics", "runner")}


@pytest.mark.parametrize("package", sorted(PACKAGE_ROLES))
def test_task_packages_use_the_same_module_names(package):
    roles = PACKAGE_ROLES[package]
    missing = [role for role in roles
               if importlib.util.find_spec(f"albert_tf.{package}.{role}") is None]
    assert not missing, f"albert_tf.{package} lacks {missing}"


@pytest.mark.parametrize("gone", ["albert_tf.squad.inputs", "albert_tf.squad.feature_cache",
                                  "albert_tf.squad.evaluate", "albert_tf.squad.objective",
                                  "albert_tf.glue.tasks"])
def test_old_module_names_are_gone(gone):
    assert importlib.util.find_spec(gone) is None


def test_length_buckets_sets_no_hidden_state():
    """The datasets' lengths come from the buckets `__init__` keeps from its return
    (`self.buckets`), so choosing them has no side effect that a later step would silently
    depend on."""
    fake = types.SimpleNamespace(opts=types.SimpleNamespace(bucket_by_length=True),
                                 strategy=tf.distribute.get_strategy())
    before = dict(vars(fake))
    buckets = FineTuningRun.length_buckets(fake, 128, min_length=5)
    assert buckets is not None and buckets.lengths[-1] == 128
    assert vars(fake) == before


def test_construction_does_no_set_up(tmp_path):
    """`__init__` keeps the options: options that `prepare` refuses (no phase, missing files)
    construct fine, and nothing is read or written until `prepare` / `run`."""
    from albert_tf.glue.options import GlueRunOptions
    from albert_tf.glue.runner import GlueRun, GlueRunError

    run = GlueRun(GlueRunOptions(data_dir=str(tmp_path / "absent"), task_name="mrpc",
                                 output_dir=str(tmp_path / "out")))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(GlueRunError, match="at least one of do_train, do_eval, do_predict or "
                                           "export_dir is required"):
        run.prepare()


def test_the_template_never_switches_on_the_options_type():
    """Behaviour comes from the options' own methods (`phase_switches`, `problems`,
    `follows_training`, `export_target`), not from `isinstance(opts, <mixin>)`."""
    from albert_tf.finetuning import run as run_module

    tree = ast.parse(inspect.getsource(run_module))
    switches = [ast.unparse(node) for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"
                and "opts" in ast.unparse(node.args[0])]
    assert not switches


@pytest.mark.parametrize("package", sorted(TASK_RUNS))
def test_hooks_set_no_attributes(package):
    """A task's hooks return what they make; only cached properties derive state from the
    options, so the order of calls cannot matter."""
    module = importlib.import_module(f"albert_tf.{package}.runner")
    tree = ast.parse(inspect.getsource(getattr(module, TASK_RUNS[package])))
    assigned = [ast.unparse(target) for node in ast.walk(tree) if isinstance(node, (ast.Assign,
                                                                                   ast.AnnAssign))
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"]
    assert not assigned
