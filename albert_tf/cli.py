"""What every fine-tuning script's `run` and `main` share (run_classifier, run_race, run_squad).

`run_from_flags` turns the parsed flags into the run's options and strategy; `run_script`
is the scripts' `main`. Bad input — a config, checkpoint or tokenizer that does not fit, a
missing file, an inconsistent option (all ValueErrors or the types below) — or a diverged
run, or a side-car evaluator that waited --eval_timeout_secs in vain, ends the script
with one line `<script>: error: <message>` on stderr and exit status 1, not a traceback
(`--verbosity=1` logs it). Other exceptions propagate with their traceback.

Example:
    >>> def run():
    ...     return run_from_flags(RaceRunOptions, run_race, _OPTION_FLAGS)
    >>> def main(argv):
    ...     run_script("run_race", argv, run)
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from absl import app, flags, logging

from albert_tf.training import flags as training_flags


def flags_parser(name: str) -> Callable[[list[str]], list[str]]:
    """`app.run(main, flags_parser=flags_parser("run_x"))`: a bad flag (unknown, missing,
    out of range) is one line `run_x: error: flag --x=v: expected …` and exit status 1,
    instead of absl's two-line "FATAL Flags parsing error" banner."""

    def parse(argv: list[str]) -> list[str]:
        try:
            return flags.FLAGS(argv)
        except flags.Error as e:
            message = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
            print(f"{name}: error: {message}", file=sys.stderr)
            sys.exit(1)

    return parse


def run_script(name: str, argv: Sequence[str], run: Callable[[], Any]) -> None:
    """Calls `run()` after absl parsed the flags; a bad-input error exits 1 with one line."""
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    # ConfigError, CheckpointMismatchError and TokenizerError are ValueErrors: nothing here
    # imports TensorFlow, so errors found before the run needs it report at once.
    # pylint: disable=import-outside-toplevel
    from albert_tf.training.checkpoint_poll import CheckpointWaitTimeout
    from albert_tf.training.errors import NonFiniteLossError

    try:
        run()
    except (NonFiniteLossError, CheckpointWaitTimeout, NotImplementedError, FileNotFoundError,
            ValueError) as e:
        logging.debug("traceback", exc_info=True)
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(1)


def run_from_flags(options_class: Callable[..., Any], run_fn: Callable[[Any, Any], Any],
                   option_flags: Sequence[str], flag_values: flags.FlagValues = flags.FLAGS
                   ) -> Any:
    """`run_fn(options_class(**{flag: value}), strategy)`: the flags named in `option_flags`
    become the run's options; the strategy (and seed, determinism) come from the loop's flags."""
    options = options_class(**{name: flag_values[name].value for name in option_flags})
    return run_fn(options, training_flags.setup_from_flags(flag_values))
