"""Each script option is declared once: a dataclass field whose metadata carries its flag's help,
choices and bounds. The absl flags, their validators and the in-process checks all come from it.

The run_* scripts' options dataclasses (`training.loop_options`, `finetuning.options`, the tasks'
`options` modules) are made of `option(...)` fields; `define_flags(Options)` turns them into absl
flags with the same names and defaults, and `cli.options_from_flags` reads them back. A subclass
that only rewords a field's help keeps its default through `reworded(...)`, so a default is
written in one place. Importable without TensorFlow (fast `--help`).

Example:
    >>> @dataclasses.dataclass(kw_only=True)
    ... class Options:
    ...     log_steps: int = option(100, "Log every this many steps.", lower_bound=1)
    ...     learning_rate: float = option(5e-5, "Peak learning rate.", float_range=POSITIVE)
    >>> define_flags(Options)            # --log_steps, --learning_rate (+ validators)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from typing import Any, Mapping, Sequence

from absl import flags

__all__ = ["DROPOUT", "FINITE", "LEARNING_RATE", "NON_NEGATIVE", "POSITIVE", "PROBABILITY", "FlagSpec",
           "FloatRange", "define_flags", "field_default", "float_flag_names", "float_problem",
           "float_ranges", "option", "option_problems", "register_float_validators", "reworded"]


@dataclasses.dataclass(frozen=True)
class FloatRange:
    """What a float option must hold besides being finite: optional bounds (closed unless
    `*_open`), applied only while the bool option `when` is true (e.g. "do_train").

    `unset` accepts NaN as "not given" (the original's `--threshold_to_export` default);
    None, the default of optional float options, is always accepted.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    when: str | None = None
    unset: bool = False

    def requirement(self) -> str:
        """E.g. "a finite number > 0", "a finite number in [0, 1)"."""
        if self.low is not None and self.high is not None:
            return (f"a finite number in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        return "a finite number"

    def contains(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None
                    and (value >= self.high if self.high_open else value > self.high))


FINITE = FloatRange()
POSITIVE = FloatRange(low=0.0, low_open=True)
NON_NEGATIVE = FloatRange(low=0.0)
PROBABILITY = FloatRange(low=0.0, high=1.0)
DROPOUT = FloatRange(low=0.0, high=1.0, high_open=True)  # rate 1 would divide by zero
# A learning rate must be > 0 when it is used (--do_train).
LEARNING_RATE = FloatRange(low=0.0, low_open=True, when="do_train")


@dataclasses.dataclass(frozen=True)
class FlagSpec:
    """How an option appears on the command line: help text, enum choices, integer lower
    bound, float range, and whether the flag must be given."""

    help: str
    choices: Sequence[str] | None = None
    lower_bound: int | None = None
    float_range: FloatRange | None = None
    required: bool = False
    case_sensitive: bool = True


_SPEC = "albert_tf.flag"
# Metadata key of a `reworded` field: the class whose default it keeps.
REWORDED = "albert_tf.reworded_from"


def option(default: Any = dataclasses.MISSING, help: str = "", *,
           choices: Sequence[str] | None = None, lower_bound: int | None = None,
           float_range: FloatRange | None = None, required: bool = False,
           case_sensitive: bool = True) -> Any:
    """A dataclass field that is also a flag (no `default`: a required field, flag default None)."""
    spec = FlagSpec(help, tuple(choices) if choices is not None else None, lower_bound,
                    float_range, required, case_sensitive)
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def reworded(options_class: type, name: str, help: str, **changes: Any) -> Any:
    """`options_class`'s field `name` with another help text (and any other `FlagSpec` field in
    `changes`, e.g. `lower_bound`) and the same default, for a subclass whose script explains
    the flag differently."""
    field = _field(options_class, name)
    spec = dataclasses.replace(field.metadata[_SPEC], help=help, **changes)
    return dataclasses.field(default=field.default,
                             metadata={_SPEC: spec, REWORDED: options_class.__name__})


def _field(options_class: type, name: str) -> dataclasses.Field:
    for field in dataclasses.fields(options_class):
        if field.name == name:
            return field
    raise AttributeError(f"{options_class.__name__} has no option {name!r}")


def field_default(options_class: type, name: str) -> Any:
    """The default of `options_class.name` (None for a required one)."""
    field = _field(options_class, name)
    return None if field.default is dataclasses.MISSING else field.default


def flag_specs(options_class: type) -> dict[str, FlagSpec]:
    """{field name: FlagSpec} of the fields declared with `option`, in declaration order."""
    return {field.name: field.metadata[_SPEC] for field in dataclasses.fields(options_class)
            if _SPEC in field.metadata}


def float_ranges(options_class: type) -> dict[str, FloatRange]:
    """{field: FloatRange} of the float options that declare one."""
    return {name: spec.float_range for name, spec in flag_specs(options_class).items()
            if spec.float_range is not None}


def _kind(field: dataclasses.Field) -> str:
    """"bool", "int", "float" or "str" from the annotation (a string under postponed evaluation)."""
    annotation = field.type if isinstance(field.type, str) else getattr(field.type, "__name__",
                                                                       str(field.type))
    kinds = [part.strip() for part in annotation.split("|") if part.strip() != "None"]
    if len(kinds) != 1 or kinds[0] not in ("bool", "int", "float", "str"):
        raise TypeError(f"option {field.name}: unsupported type {annotation!r}")
    return kinds[0]


def flag_module(module_name: str) -> str:
    """The name absl files a module's flags under (the program's own: `sys.argv[0]`)."""
    return sys.argv[0] if module_name == "__main__" else module_name


def define_flags(options_class: type, flag_values: flags.FlagValues = flags.FLAGS,
                 module_name: str | None = None) -> list[str]:
    """Defines an absl flag for every `option` field of `options_class` not yet defined (same
    name, default, help, choices and bounds), marks the required ones, and registers the float
    validators (`register_float_validators`). The flags belong to `module_name` (default: the
    caller's module, as if it had called `flags.DEFINE_*` itself). Returns the names defined."""
    module_name = flag_module(module_name or sys._getframe(1).f_globals["__name__"])
    defined = []
    for field in dataclasses.fields(options_class):
        spec = field.metadata.get(_SPEC)
        if spec is None or field.name in flag_values:
            continue
        default = None if field.default is dataclasses.MISSING else field.default
        common = dict(flag_values=flag_values, module_name=module_name)
        kind = _kind(field)
        if spec.choices is not None:
            flags.DEFINE_enum(field.name, default, list(spec.choices), spec.help,
                              case_sensitive=spec.case_sensitive, **common)
        elif kind == "bool":
            flags.DEFINE_bool(field.name, default, spec.help, **common)
        elif kind == "int":
            flags.DEFINE_integer(field.name, default, spec.help, lower_bound=spec.lower_bound,
                                 **common)
        elif kind == "float":
            flags.DEFINE_float(field.name, default, spec.help, **common)
        else:
            flags.DEFINE_string(field.name, default, spec.help, **common)
        if spec.required:
            flags.mark_flag_as_required(field.name, flag_values=flag_values)
        defined.append(field.name)
    register_float_validators({name: allowed for name, allowed in float_ranges(options_class).items()
                               if name in defined}, flag_values, names=[
        name for name in defined if isinstance(flag_values[name].parser, flags.FloatParser)])
    return defined


def float_flag_names(flag_values: flags.FlagValues = flags.FLAGS) -> list[str]:
    """Names of the float flags defined in `flag_values`."""
    return sorted(name for name in flag_values
                  if isinstance(flag_values[name].parser, flags.FloatParser))


def register_float_validators(ranges: Mapping[str, FloatRange] | None = None,
                              flag_values: flags.FlagValues = flags.FLAGS,
                              names: Sequence[str] | None = None) -> None:
    """Every float flag in `names` (default: all defined) must be finite (NaN and ±inf
    otherwise train a step and then stop on a non-finite loss); those named in `ranges` must
    also lie in their range.

    A bad value is a flag parsing error: `<script>: error: flag --learning_rate=nan: expected
    a finite number > 0` with `albert_tf.cli.flags_parser`.
    """
    ranges = dict(ranges or {})
    names = list(float_flag_names(flag_values) if names is None else names)
    unknown = sorted(set(ranges) - set(names))
    if unknown:
        raise ValueError(f"not float flags: {', '.join(unknown)}")
    for name in names:
        flags.register_validator(
            name, functools.partial(_check_float, ranges.get(name, FINITE), flag_values),
            flag_values=flag_values)


def float_problem(allowed: FloatRange, value: float | None, applies: bool = True) -> str | None:
    """What is wrong with `value` under `allowed` ("expected a finite number > 0 with
    --do_train"), or None when it is fine. `applies`: the `when` option's value. Shared by the
    flag validators and the options of in-process runs (`option_problems`)."""
    if value is None or (allowed.unset and math.isnan(value)):
        return None
    if not math.isfinite(value):
        return f"expected {FINITE.requirement()}"
    if applies and not allowed.contains(value):
        condition = f" with --{allowed.when}" if allowed.when else ""
        return f"expected {allowed.requirement()}{condition}"
    return None


def option_problems(options: Any) -> list[str]:
    """`--name=value: what was expected` for each option of the dataclass instance `options`
    outside its declared choices, lower bound or float range (what the flags refuse at parse
    time, for in-process callers)."""
    problems = []
    for name, spec in flag_specs(type(options)).items():
        value = getattr(options, name)
        if value is None:
            continue
        if spec.choices is not None and value not in spec.choices and not (
                not spec.case_sensitive and str(value).lower() in
                [choice.lower() for choice in spec.choices]):
            problems.append(f"--{name}={value}: expected one of {', '.join(spec.choices)}")
        elif spec.lower_bound is not None and value < spec.lower_bound:
            problems.append(f"--{name}={value}: expected an integer >= {spec.lower_bound}")
        elif isinstance(value, float):
            allowed = spec.float_range or FINITE
            applies = allowed.when is None or bool(getattr(options, allowed.when))
            problem = float_problem(allowed, value, applies)
            if problem is not None:
                problems.append(f"--{name}={value}: {problem}")
    return problems


def _check_float(allowed: FloatRange, flag_values: flags.FlagValues, value: float | None) -> bool:
    """absl validator: True, or a ValidationError whose text says what was expected."""
    applies = allowed.when is None or bool(flag_values[allowed.when].value)
    problem = float_problem(allowed, value, applies)
    if problem is not None:
        raise flags.ValidationError(problem)
    return True
