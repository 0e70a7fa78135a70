"""Runs command-line tools one after another in this process, each as `python -m` runs it.

`ram://` (TensorFlow's in-memory file system, the stand-in for a bucket) lives only as long
as the process, so a job whose every path is on it must run its tools in one process. Each
tool defines its flags in absl's one global `FLAGS` when imported, and several define the
same names (--output_dir, --albert_config_file), so `run_tool` gives each run a clean slate:
it takes every flag but absl's own out of `FLAGS`, imports the tool's module afresh, calls
its `console_main()` with `sys.argv` set (absl parses it, `cli.run_script` reports errors
as the command line does), and then puts `FLAGS` and `sys.modules` back as they were, so
tests that run later in the same process see the flags they defined.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import sys
from typing import Iterator

from absl import app, flags
from absl import logging as absl_logging

FLAGS = flags.FLAGS


@dataclasses.dataclass
class ToolRun:
    status: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if "error" in line.lower()]


_HELP_FLAGS = ("help", "helpshort", "helpfull", "helpxml", "?")


def _is_absl_own(module_name: str) -> bool:
    return module_name.startswith("absl")


@contextlib.contextmanager
def _clean_flags() -> Iterator[None]:
    """FLAGS without any tool's flags inside the block; restored whole afterwards."""
    app.define_help_flags()  # (absl defines them once per process, at the first app.run)
    state = {key: value for key, value in FLAGS.__dict__.items()}
    saved = {key: (dict(value) if isinstance(value, dict) else value)
             for key, value in state.items()}
    by_module = {k: list(v) for k, v in FLAGS.__dict__["__flags_by_module"].items()}
    by_id = {k: list(v) for k, v in FLAGS.__dict__["__flags_by_module_id"].items()}
    key_flags = {k: list(v) for k, v in FLAGS.__dict__["__key_flags_by_module"].items()}
    values = {name: (flag.value, flag.present, flag.using_default_value)
              for name, flag in FLAGS._flags().items()}
    keep = {flag.name for module, flag_list in by_module.items() if _is_absl_own(module)
            for flag in flag_list}
    keep |= {name for name in FLAGS if name in _HELP_FLAGS}  # absl's too, kept for good
    for name in list(FLAGS):
        if name not in keep:
            delattr(FLAGS, name)
    FLAGS.unparse_flags()
    try:
        yield
    finally:
        FLAGS.__dict__.update(saved)
        FLAGS.__dict__["__flags_by_module"] = by_module
        FLAGS.__dict__["__flags_by_module_id"] = by_id
        FLAGS.__dict__["__key_flags_by_module"] = key_flags
        for name, (value, present, default) in values.items():
            flag = FLAGS._flags()[name]
            flag.value, flag.present, flag.using_default_value = value, present, default


def run_tool(module_name: str, *args: str, program: str | None = None) -> ToolRun:
    """`python -m <module_name> <args>`, in this process: its exit status (0 when it
    returned) and what it printed. `program`: another `sys.argv[0]` (a console script's
    name, as pip's wrapper runs the tool)."""
    saved_module = sys.modules.pop(module_name, None)
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = [program or module_name, *args]
    status = 0
    verbosity = absl_logging.get_verbosity()  # app.run sets the tool's; later tests keep theirs
    with _clean_flags(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        saved_argv, sys.argv = sys.argv, argv
        try:
            module = importlib.import_module(module_name)
            module.console_main()
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finally:
            sys.argv = saved_argv
            absl_logging.set_verbosity(verbosity)
            if saved_module is not None:
                sys.modules[module_name] = saved_module
            else:
                sys.modules.pop(module_name, None)
    return ToolRun(status, stdout.getvalue(), stderr.getvalue())
