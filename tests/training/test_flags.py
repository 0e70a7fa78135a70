"""register_float_validators: every float flag finite, ranges where they mean something."""

from __future__ import annotations

import math

import pytest
from absl import flags

from albert_tf.training import flags as training_flags


@pytest.fixture
def flag_values() -> flags.FlagValues:
    values = flags.FlagValues()
    flags.DEFINE_bool("do_train", False, "", flag_values=values)
    flags.DEFINE_float("learning_rate", 5e-5, "", flag_values=values)
    flags.DEFINE_float("warmup_proportion", 0.1, "", flag_values=values)
    flags.DEFINE_float("dropout_prob", 0.1, "", flag_values=values)
    flags.DEFINE_float("threshold_to_export", float("nan"), "", flag_values=values)
    flags.DEFINE_float("null_score_diff_threshold", None, "", flag_values=values)
    flags.DEFINE_float("free", 1.0, "", flag_values=values)  # no range: finite only
    flags.DEFINE_integer("steps", 1, "", flag_values=values)
    training_flags.register_float_validators({
        "learning_rate": training_flags.FloatRange(low=0.0, low_open=True, when="do_train"),
        "warmup_proportion": training_flags.PROBABILITY,
        "dropout_prob": training_flags.DROPOUT,
        "threshold_to_export": training_flags.FloatRange(unset=True)}, flag_values=values)
    return values


def parse_error(flag_values: flags.FlagValues, *args: str) -> str:
    with pytest.raises(flags.IllegalFlagValueError) as error:
        flag_values(["prog", *args])
    return str(error.value)


def test_defaults_parse(flag_values):
    flag_values(["prog"])
    assert math.isnan(flag_values.threshold_to_export)
    assert flag_values.null_score_diff_threshold is None


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_values_are_refused_everywhere(flag_values, value):
    for name in ("learning_rate", "free", "null_score_diff_threshold", "warmup_proportion"):
        message = parse_error(flag_values, f"--{name}={value}")
        assert message.endswith(": expected a finite number"), message
        assert f"--{name}=" in message


def test_nan_default_means_unset_but_inf_is_refused(flag_values):
    flag_values(["prog", "--threshold_to_export=nan"])
    assert "expected a finite number" in parse_error(flag_values, "--threshold_to_export=inf")


def test_learning_rate_must_be_positive_only_when_training(flag_values):
    flag_values(["prog", "--learning_rate=0"])  # evaluation only: unused
    assert parse_error(flag_values, "--learning_rate=0", "--do_train") == (
        "flag --learning_rate=0.0: expected a finite number > 0 with --do_train")
    assert "> 0" in parse_error(flag_values, "--learning_rate=-1e-5", "--do_train")
    flag_values(["prog", "--learning_rate=1e-5", "--do_train"])


@pytest.mark.parametrize("name,good,bad,requirement", [
    ("warmup_proportion", ["0", "1", "0.5"], ["-0.1", "1.5"], "in [0, 1]"),
    ("dropout_prob", ["0", "0.99"], ["1", "-0.5"], "in [0, 1)"),
])
def test_ranges(flag_values, name, good, bad, requirement):
    for value in good:
        flag_values(["prog", f"--{name}={value}"])
    for value in bad:
        assert parse_error(flag_values, f"--{name}={value}").endswith(
            f"expected a finite number {requirement}")


def test_ranges_must_name_float_flags():
    values = flags.FlagValues()
    flags.DEFINE_integer("steps", 1, "", flag_values=values)
    with pytest.raises(ValueError, match="not float flags: steps"):
        training_flags.register_float_validators({"steps": training_flags.POSITIVE},
                                                 flag_values=values)


def test_requirement_texts():
    assert training_flags.POSITIVE.requirement() == "a finite number > 0"
    assert training_flags.NON_NEGATIVE.requirement() == "a finite number >= 0"
    assert training_flags.FloatRange(high=2.0, high_open=True).requirement() == "a finite number < 2"
