"""Each script option is declared once: a field of the script's options dataclass
(`albert_tf.runtime.options.option`) that is its flag. The scripts define no flag of their own for a
field, a subclass that only rewords a field keeps its base's default (`reworded`), the loop's
`LoopConfig` inherits the shared settings, and the flags the scripts end up with carry the
fields' defaults, help and bounds."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import pathlib
import subprocess
import sys

import pytest
from absl import flags

from albert_tf.runtime import options
from albert_tf.training.loop_options import LoopSettings
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPTS = {
    "run_classifier": "albert_tf.glue.options:GlueRunOptions",
    "run_race": "albert_tf.race.options:RaceRunOptions",
    "run_squad": "albert_tf.squad.options:SquadRunOptions",
    "run_pretraining": "albert_tf.pretraining.runner:PretrainingRunOptions",
}


def options_class(target: str) -> type:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def hand_defined_flags(path: str) -> set[str]:
    """Names of the flags a module defines itself (`flags.DEFINE_*("name", ...)`)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("DEFINE") and node.args
            and isinstance(node.args[0], ast.Constant)}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_script_defines_no_flag_of_an_option_by_hand(script):
    fields = {field.name for field in dataclasses.fields(options_class(SCRIPTS[script]))}
    for path in (f"{REPO}/albert_tf/{script}.py", f"{REPO}/albert_tf/training/flags.py"):
        assert not hand_defined_flags(path) & fields, path


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_redeclared_field_has_its_own_default_or_is_reworded(script):
    """A subclass field that repeats an ancestor's default must be `reworded` (which copies
    it), so each default is written once."""
    repeated = []
    for cls in options_class(SCRIPTS[script]).__mro__:
        own = cls.__dict__.get("__annotations__", {})
        for base in cls.__mro__[1:]:
            for name in own:
                if name in base.__dict__.get("__annotations__", {}):
                    mine, theirs = cls.__dataclass_fields__[name], base.__dataclass_fields__[name]
                    same = (mine.default == theirs.default
                            or mine.default is theirs.default)  # NaN
                    if same and options.REWORDED not in mine.metadata:
                        repeated.append(f"{cls.__name__}.{name} repeats {base.__name__}'s "
                                        f"default {mine.default!r}")
    assert not repeated


def test_loop_config_inherits_the_shared_settings():
    from albert_tf.training.loop import LoopConfig

    assert issubclass(LoopConfig, LoopSettings)
    assert not set(LoopConfig.__dict__.get("__annotations__", {})) & {
        field.name for field in dataclasses.fields(LoopSettings)}
    from albert_tf.training.loop_options import LoopOptions

    config = LoopConfig.from_options(LoopOptions(log_steps=7, dtype="bfloat16"), output_dir="o")
    assert (config.log_steps, config.dtype, config.jit_compile) == (7, "bfloat16", None)


@pytest.mark.parametrize("path", ["albert_tf/run_pretraining.py", "albert_tf/training/flags.py"])
def test_the_pretraining_and_shared_flags_are_option_fields_too(path):
    """No flag defined by hand at all: the set-up, TPU and pretraining-only flags are fields
    (`SetupOptions`, `TpuOptions`, `PretrainingRunOptions.masked_lm_budget`)."""
    assert hand_defined_flags(f"{REPO}/{path}") == set()


def test_loop_config_takes_its_defaults_and_bounds_from_the_option_fields():
    """Every LoopConfig setting a script also has is an option field (its default written
    there once), and `validate` refuses each field outside its declared bound or choices."""
    from albert_tf.training.loop import LoopConfig

    specs = options.flag_specs(LoopConfig)
    script_fields = {field.name for target in SCRIPTS.values()
                     for field in dataclasses.fields(options_class(target))}
    restated = [field.name for field in dataclasses.fields(LoopConfig)
                if field.name in script_fields and field.name not in specs
                and field.default is not dataclasses.MISSING]  # output_dir has none
    assert not restated
    assert {"keep_checkpoint_max", "train_batch_size", "iterations_per_loop", "log_steps",
            "save_checkpoints_steps", "dtype", "clip_norm_mode"} <= set(specs)
    LoopConfig("out").validate()  # the declared defaults pass
    for name, spec in specs.items():
        bad = ("float8" if spec.choices else
               spec.lower_bound - 1 if spec.lower_bound is not None else None)
        if bad is None:
            continue
        with pytest.raises(ValueError, match=f"--{name}={bad}: expected"):
            LoopConfig("out", **{name: bad}).validate()


def _literal_keep_checkpoint_defaults(default: int) -> list[str]:
    """Where albert_tf/ writes the number `default` as the count of kept checkpoints (a field,
    an `option(5, …)`, a keyword; another count, e.g. a sweep's 2, is not this fact)."""
    names = {"keep_checkpoint_max", "num_keep_checkpoint"}
    found = []
    for path in sorted(pathlib.Path(REPO, "albert_tf").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target, value = None, None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, value = node.target.id, node.value
            elif isinstance(node, ast.keyword):
                target, value = node.arg, node.value
            if target not in names or value is None:
                continue
            if isinstance(value, ast.Call) and value.args:
                value = value.args[0]  # option(5, ...)
            if isinstance(value, ast.Constant) and value.value == default:
                found.append(f"{path.relative_to(REPO).as_posix()}:{node.lineno}")
    return found


def test_the_number_of_kept_checkpoints_is_said_once():
    from albert_tf.training.loop_options import CheckpointSettings

    found = _literal_keep_checkpoint_defaults(
        options.field_default(CheckpointSettings, "keep_checkpoint_max"))
    assert len(found) == 1 and found[0].startswith("albert_tf/training/loop_options.py:"), found
    from albert_tf.race.options import RaceRunOptions

    race = {field.name: field for field in dataclasses.fields(RaceRunOptions)}
    assert options.REWORDED in race["num_keep_checkpoint"].metadata


# Run in one child process (TensorFlow imported once): the scripts define clashing flags, so the
# flags each script adds are removed again before the next one is imported.
PROBE = r"""
import dataclasses, importlib, json, math, sys
from absl import flags
results = {}
for script, target in json.loads(sys.argv[1]).items():
    before = set(flags.FLAGS)
    importlib.import_module(f"albert_tf.{script}")
    module, name = target.split(":")
    rows = []
    for field in dataclasses.fields(getattr(importlib.import_module(module), name)):
        default = None if field.default is dataclasses.MISSING else field.default
        flag = flags.FLAGS[field.name] if field.name in flags.FLAGS else None
        spec = field.metadata.get("albert_tf.flag")
        found = flag is not None
        rows.append([field.name, repr(default), repr(flag.default) if found else "<no flag>",
                     flag.help if found else "", spec.help if spec else "<no spec>",
                     found and any("must have a value other than None" in str(v.message)
                                   for v in flag.validators),
                     bool(spec and spec.required)])
    results[script] = rows
    for added in set(flags.FLAGS) - before:
        delattr(flags.FLAGS, added)
    sys.modules.pop(f"albert_tf.{script}")
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def option_rows() -> dict[str, list[list]]:
    """{script: [[field, default, flag default, flag help, spec help, required×2], ...]}."""
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(SCRIPTS)], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=RUNTIME_PYTHONPATH), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_flag_comes_from_its_field(option_rows, script):
    rows = option_rows[script]
    assert len(rows) > 20  # the dataclass was found and read
    problems = [f"{name}: field {default}, flag {flag}" for name, default, flag, *_ in rows
                if flag != default]
    problems += [f"{name}: help differs" for name, _, _, flag_help, spec_help, *_ in rows
                 if not flag_help.endswith(spec_help)]
    problems += [f"{name}: required differs" for name, *_, flag_req, spec_req in rows
                 if flag_req != spec_req]
    assert not problems, f"{script}:\n" + "\n".join(problems)


def test_define_flags_makes_each_kind_with_its_bounds():
    @dataclasses.dataclass(kw_only=True)
    class Options:
        name: str = options.option(help="required", required=True)
        steps: int = options.option(3, "steps", lower_bound=1)
        rate: float = options.option(0.5, "rate", float_range=options.PROBABILITY)
        mode: str = options.option("a", "mode", choices=("a", "b"))
        on: bool | None = options.option(None, "switch")

    values = flags.FlagValues()
    assert options.define_flags(Options, values) == ["name", "steps", "rate", "mode", "on"]
    with pytest.raises(flags.IllegalFlagValueError, match="steps"):
        values(["prog", "--name=x", "--steps=0"])
    values.unparse_flags()
    with pytest.raises(flags.IllegalFlagValueError, match=r"expected a finite number in \[0, 1\]"):
        values(["prog", "--name=x", "--rate=1.5"])
    values.unparse_flags()
    with pytest.raises(flags.IllegalFlagValueError, match="mode"):
        values(["prog", "--name=x", "--mode=c"])
    values.unparse_flags()
    values(["prog", "--name=x", "--noon"])
    from albert_tf import cli

    assert cli.options_from_flags(Options, values) == Options(name="x", on=False)
    assert options.option_problems(Options(name="x", steps=0, rate=2.0, mode="c")) == [
        "--steps=0: expected an integer >= 1", "--rate=2.0: expected a finite number in [0, 1]",
        "--mode=c: expected one of a, b"]


def test_a_field_without_a_flag_is_named():
    from albert_tf import cli

    @dataclasses.dataclass
    class Options:
        present: int = 1
        absent: int = 2

    values = flags.FlagValues()
    flags.DEFINE_integer("present", 1, "", flag_values=values)
    values(["prog"])
    with pytest.raises(AttributeError, match=r"Options.absent has no --absent flag"):
        cli.options_from_flags(Options, values)
    flags.DEFINE_integer("absent", 2, "", flag_values=values)
    values(["prog", "--present=7"])
    assert cli.options_from_flags(Options, values) == Options(present=7, absent=2)
