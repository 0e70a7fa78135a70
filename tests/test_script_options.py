"""Each script's options dataclass is its list of settings: `cli.options_from_flags` fills every
field from the flag of the same name, so each field must have a flag with the same default
(the script's `--help` then tells the truth about what an in-process caller gets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPTS = {
    "run_classifier.py": "albert_tf.glue.runner:GlueRunOptions",
    "run_race.py": "albert_tf.race.runner:RaceRunOptions",
    "run_squad.py": "albert_tf.squad.runner:SquadRunOptions",
    "run_pretraining.py": "albert_tf.pretraining.runner:PretrainingRunOptions",
}

# Run in one child process (TensorFlow imported once): the scripts define clashing flags, so the
# flags each script adds are removed again before the next one is imported.
PROBE = r"""
import dataclasses, importlib, importlib.util, json, sys
from absl import flags
results = {}
for script, target in json.loads(sys.argv[1]).items():
    before = set(flags.FLAGS)
    spec = importlib.util.spec_from_file_location("script_under_test", script)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    module, name = target.split(":")
    rows = []
    for field in dataclasses.fields(getattr(importlib.import_module(module), name)):
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = "<required>"
        flag = flags.FLAGS[field.name].default if field.name in flags.FLAGS else "<no flag>"
        rows.append([field.name, repr(default), repr(flag)])
    results[script] = rows
    for added in set(flags.FLAGS) - before:
        delattr(flags.FLAGS, added)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def option_rows() -> dict[str, list[list[str]]]:
    """{script: [[field, option default, flag default], ...]} read in a child process."""
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(SCRIPTS)], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_option_has_a_flag_with_its_default(option_rows, script):
    rows = option_rows[script]
    assert len(rows) > 20  # the dataclass was found and read
    missing = [name for name, _, flag in rows if flag == "'<no flag>'"]
    assert not missing, f"{script}: options without a flag: {missing}"
    # A required option (no dataclass default) may have any flag default, e.g. None.
    differing = [f"{name}: option {default}, flag {flag}" for name, default, flag in rows
                 if default != "'<required>'" and default != flag]
    assert not differing, f"{script}: option and flag defaults differ:\n" + "\n".join(differing)


def test_a_field_without_a_flag_is_named():
    import dataclasses

    from absl import flags

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
