"""What every fine-tuning script's `run` and `main` share (run_classifier, run_race, run_squad).

`run_from_flags` turns the parsed flags into the run's options and strategy; `run_script`
is the scripts' `main`. Bad input — a config, checkpoint or tokenizer that does not fit, a
missing file, an inconsistent option (all ValueErrors or the types below) — or a diverged
run, or a side-car evaluator that waited --eval_timeout_secs in vain, or a full disk
(`OutputWriteError`, `DiskFullError`), or a lost peer worker, ends the script with one line
`<script>: error: <message>` on stderr and exit status 1, not a traceback (`--verbosity=1`
logs it). A run preempted by SIGTERM/SIGINT exits 143/130 after its checkpoint
(docs/faults.md). Other exceptions propagate with their traceback.

Example:
    >>> def run():
    ...     return run_from_flags(RaceRunOptions, run_race)
    >>> def main(argv):
    ...     run_script("run_race", argv, run)
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from typing import Any, Callable, Iterator, Sequence

from absl import app, flags, logging

from albert_tf.runtime.atomic_files import DISK_FULL_ERRNOS, DiskFullError
from albert_tf.training import flags as training_flags

__all__ = ["DISK_FULL_ERRNOS", "disk_full_exits", "flags_parser", "options_from_flags",
           "run_from_flags", "run_script", "start"]


@contextlib.contextmanager
def disk_full_exits(name: str) -> Iterator[None]:
    """Every tool's one way out of a full disk: a `DiskFullError` raised in the block (an
    `atomic_file`/`atomic_directory` output; its temporary already removed) becomes one line
    `<name>: error: disk full while writing <what> <path>: <cause>` on stderr and exit 1."""
    try:
        yield
    except DiskFullError as e:
        logging.debug("traceback", exc_info=True)
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(1)


# absl's help flags (app.define_help_flags): each prints its text and exits with status 1.
HELP_FLAGS = frozenset({"help", "helpshort", "helpfull", "helpxml", "?"})


def asks_for_help(argv: Sequence[str]) -> bool:
    """Whether the command line (program name first) holds one of absl's help flags
    (`--help`, `-?`, `--helpshort`, `--helpfull`, `--helpxml`; not after `--`)."""
    for arg in argv[1:]:
        if arg == "--":
            return False
        if arg.startswith("-"):
            name, _, value = arg.lstrip("-").partition("=")
            if name in HELP_FLAGS and value.lower() not in ("false", "0"):
                return True
    return False


def flags_parser(name: str) -> Callable[[list[str]], list[str]]:
    """`app.run(main, flags_parser=flags_parser("run_x"))`: a bad flag (unknown, missing,
    out of range) is one line `run_x: error: flag --x=v: expected …` and exit status 1,
    instead of absl's two-line "FATAL Flags parsing error" banner; asked-for help
    (`--help`, `--helpshort`, `--helpfull`) exits 0 after printing it (absl's exit status is 1)."""

    def parse(argv: list[str]) -> list[str]:
        try:
            return flags.FLAGS(argv)
        except flags.Error as e:
            message = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
            print(f"{name}: error: {message}", file=sys.stderr)
            sys.exit(1)
        except SystemExit as e:
            if e.code == 1 and asks_for_help(argv):
                sys.stdout.flush()
                sys.exit(0)
            raise

    return parse


def start(name: str, run: Callable[[], Any], module: str,
          errors: tuple[type[BaseException], ...] = ()) -> None:
    """A tool's entry point, for `python -m <module>` and its console script alike: absl parses
    the flags (`flags_parser(name)`), then `run_script(name, argv, run, errors)`.

    The flags `module` defines are made the program's, so `--help`/`--helpshort` list them
    either way (absl keys a program's flags by `sys.argv[0]`, which a console script's module
    is not).
    """
    if module != "__main__":
        for flag in flags.FLAGS.get_key_flags_for_module(module):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    app.run(lambda argv: run_script(name, argv, run, errors), flags_parser=flags_parser(name))


def run_script(name: str, argv: Sequence[str], run: Callable[[], Any],
               errors: tuple[type[BaseException], ...] = ()) -> None:
    """Calls `run()` after absl parsed the flags; a bad-input error exits 1 with one line.

    Every entry point (the run_* scripts and `python -m albert_tf.<tool>`) ends here. `errors`
    adds a tool's own failure types (an export that failed its check) to the one-line ones.
    """
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    # ConfigError, CheckpointMismatchError and TokenizerError are ValueErrors: nothing here
    # imports TensorFlow, so errors found before the run needs it report at once.
    from albert_tf.training.errors import (CheckpointWaitTimeout, NonFiniteLossError,
                                           OutputWriteError, TrainingPreempted, WorkerLostError)

    unknown = unknown_file_systems()
    if unknown:
        print(f"{name}: error: {unknown}", file=sys.stderr)
        sys.exit(1)
    try:
        with disk_full_exits(name):
            run()
    except TrainingPreempted as e:  # its one line is logged; 143 (SIGTERM) / 130 (SIGINT)
        sys.exit(e.exit_status)
    except (NonFiniteLossError, CheckpointWaitTimeout, NotImplementedError, FileNotFoundError,
            ValueError, WorkerLostError, OutputWriteError, *errors) as e:
        logging.debug("traceback", exc_info=True)
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except OSError as e:  # a full disk (or file-size limit) where no writer named it itself
        if e.errno not in DISK_FULL_ERRNOS:
            raise
        logging.debug("traceback", exc_info=True)
        print(f"{name}: error: {e.filename or 'an output file'}: {e.strerror} while writing "
              "(a full disk or a file-size limit)", file=sys.stderr)
        sys.exit(1)


def unknown_file_systems(flag_values: flags.FlagValues = flags.FLAGS) -> str | None:
    """The first path flag naming a `scheme://` TensorFlow has no file system for (`foo://`,
    a typo of gs://), as "--flag=value: …"; None when all are local or known. Checked before a
    tool runs, so nothing is written; TensorFlow is imported only when a flag is remote."""
    from albert_tf.runtime import paths

    for name in sorted(flag_values):
        value = flag_values[name].value
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or not paths.is_remote(item) \
                    or item.startswith(("http://", "https://")):
                continue
            for part in item.split(","):  # comma-separated lists of files
                part = part.strip()
                url = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", part)
                problem = paths.unknown_scheme(part) if url else None
                if problem:
                    return f"--{name}={item}: {problem}"
    return None


def options_from_flags(options_class: type, flag_values: flags.FlagValues = flags.FLAGS) -> Any:
    """`options_class` (a dataclass) with every field set from the flag of the same name.

    The options dataclass is the one list of a script's settings: a field without a flag is a
    programming error named here, and tests/test_script_options.py checks names and defaults.
    """
    values = {}
    for field in dataclasses.fields(options_class):
        if field.name not in flag_values:
            raise AttributeError(f"{options_class.__name__}.{field.name} has no --{field.name} flag")
        values[field.name] = flag_values[field.name].value
    return options_class(**values)


def run_from_flags(options_class: type, run_fn: Callable[[Any, Any], Any],
                   flag_values: flags.FlagValues = flags.FLAGS) -> Any:
    """`run_fn(options, strategy)`: the options from their flags (`options_from_flags`); the
    strategy (and seed, determinism) from the loop's flags."""
    return run_fn(options_from_flags(options_class, flag_values),
                  training_flags.setup_from_flags(flag_values))


@dataclasses.dataclass(frozen=True)
class FineTuningScript:
    """A fine-tuning script's three entry points from its name, options class and runner:
    `run()` (FLAGS → options → `<runner>.run`, imported on first use: fast --help),
    `main(argv)` (after absl parsed the flags) and `console_main()` (the console script,
    `python -m albert_tf.<name>` and the clone's `python <name>.py` shim).

    Example (albert_tf/run_race.py):
        >>> script = FineTuningScript("run_race", RaceRunOptions, "albert_tf.race.runner",
        ...                           __name__)
        >>> run, main, console_main = script.run, script.main, script.console_main
    """

    name: str
    options_class: type
    runner_module: str
    module: str

    def run(self) -> Any:
        import importlib

        return run_from_flags(self.options_class,
                              importlib.import_module(self.runner_module).run)

    def main(self, argv: Sequence[str]) -> None:
        run_script(self.name, argv, self.run)

    def console_main(self) -> None:
        start(self.name, self.run, self.module)
