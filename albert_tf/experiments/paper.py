r"""Reruns the paper's ablation tables (2–5) at toy scale on the built-in corpus.

    python -m albert_tf.experiments.paper --output_dir=paper_run [--tables=2,3,4,5]

Builds the data once (SOP, NSP and MLM-only instances from the same documents, held-out
evaluation sets, the corpus fine-tuning task), pretrains each model a table needs with
run_pretraining's code path, evaluates it on held-out pairs, fine-tunes it with
run_classifier's code path, times ALBERT-large against BERT-large for Table 2, and writes
output_dir/results.md (our tables beside the paper's, a verdict per claim, the command,
runtimes and machine load) with PNGs of the pretraining curves. Resumable: rerun the same
command and finished work is read back, not redone. `--budget=tiny` (tests) or `--steps`
and `--seeds` shrink the run; results.md says which budget produced it.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's log)

import datetime
import os
import shlex
import sys
import time
from typing import Sequence

from absl import app, flags, logging

from albert_tf import cli
from albert_tf.experiments.budget import BUDGETS, Budget
from albert_tf.experiments.files import read_json, write_json_atomically, write_text_atomically
from albert_tf.experiments.tables import TABLES

from albert_tf.runtime import paths

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where data, runs, results.md and the PNGs go.")
flags.DEFINE_list("tables", ["2", "3", "4", "5"], "Tables to rerun (any of 2,3,4,5).")
flags.DEFINE_enum("budget", "full", list(BUDGETS), "full: the benchmark; tiny: a harness check.")
flags.DEFINE_integer("steps", None, "Override: pretraining and fine-tuning steps per model.",
                     lower_bound=1)
flags.DEFINE_integer("seeds", None, "Override: seeds per Table 5 row (and base-model spread).",
                     lower_bound=1)
flags.mark_flag_as_required("output_dir")

BUDGET_FILE = "budget.json"
TABLE2_FILE = os.path.join("table2", "result.json")


class UsageError(ValueError):
    """A flag or output_dir problem, reported as one line."""


def parse_tables(values: Sequence[str]) -> list[int]:
    try:
        tables = sorted({int(v) for v in values})
    except ValueError:
        raise UsageError(f"--tables: expected numbers among {TABLES}, got {','.join(values)}") from None
    if not tables or any(t not in TABLES for t in tables):
        raise UsageError(f"--tables: expected numbers among {TABLES}, got {','.join(values)}")
    return tables


def check_budget(output_dir: str, budget: Budget) -> None:
    """A resumed output_dir must have been started with the same budget."""
    path = os.path.join(output_dir, BUDGET_FILE)
    stored = read_json(path)
    if stored is None:
        write_json_atomically(path, budget.to_dict())
    elif stored != budget.to_dict():
        raise UsageError(f"{path}: {output_dir} holds a run with another budget "
                         f"({stored.get('name')}, {stored.get('pretrain_steps')} steps, "
                         f"{len(stored.get('seeds', []))} seeds); use a new --output_dir")


class Progress:
    """Logs each unit's start and the ETA from the units finished in this invocation."""

    def __init__(self, total: int):
        self.total, self.done, self.worked, self.seconds = total, 0, 0, 0.0

    def finished(self, name: str, seconds: float | None) -> None:
        self.done += 1
        if seconds is not None:  # None: read back from an earlier invocation
            self.worked += 1
            self.seconds += seconds
        remaining = self.total - self.done
        eta = (datetime.timedelta(seconds=int(remaining * self.seconds / self.worked))
               if self.worked else "?")
        logging.info("[%d/%d] %s %s; ETA %s", self.done, self.total, name,
                     f"done in {seconds:.0f}s" if seconds is not None else "(already done)", eta)


def run(output_dir: str, tables: Sequence[int], budget: Budget, command: str) -> str:
    """Does (or resumes) everything; returns the path of results.md."""
    from albert_tf.experiments import report, tables as T
    from albert_tf.experiments.data import prepare_data
    from albert_tf.experiments.runs import execute

    started, start = datetime.datetime.now().isoformat(timespec="seconds"), time.time()
    paths.makedirs(output_dir)
    check_budget(output_dir, budget)
    loads = [os.getloadavg()[0]]
    specs = T.plan(tables, budget)
    units = len(specs) + (2 in tables)
    logging.info("Paper run: tables %s, budget %s, %d models%s", tables, budget.name, len(specs),
                 " + Table 2 timing" if 2 in tables else "")
    data_start = time.time()
    data_dir = os.path.join(output_dir, "data")
    already = paths.exists(os.path.join(data_dir, "ready.json"))
    data = prepare_data(data_dir, budget, logging.info) if specs else None
    timing_path = os.path.join(data_dir, "seconds.json")
    if data is not None and not already:
        write_json_atomically(timing_path, {"seconds": round(time.time() - data_start, 1)})
    data_seconds = (read_json(timing_path) or {}).get("seconds")

    results: dict = {}
    table2 = read_json(os.path.join(output_dir, TABLE2_FILE))
    progress = Progress(units)
    results_md = os.path.join(output_dir, "results.md")

    def write_report(final: bool) -> None:
        """results.md so far; the curve PNGs are drawn only in the final one."""
        loads.append(os.getloadavg()[0])
        info = report.RunInfo(command=command, started=started, wall_seconds=time.time() - start,
                              load_samples=loads, data_seconds=data_seconds, done=progress.done,
                              total=units)
        write_text_atomically(results_md, report.render(tables, budget, data, results, table2,
                                                        info, output_dir, draw=final))

    runs_dir = os.path.join(output_dir, "runs")
    for spec in specs:
        fresh = read_json(os.path.join(runs_dir, spec.name, "result.json")) is None
        if fresh:
            logging.info("Starting %s", spec.name)
        unit_start = time.time()
        results[spec.name] = execute(spec, budget, data, runs_dir)
        progress.finished(spec.name, time.time() - unit_start if fresh else None)
        if fresh:
            write_report(final=False)
    if 2 in tables:
        fresh = table2 is None
        if fresh:
            from albert_tf.experiments.throughput import measure

            unit_start, cpu_start = time.time(), time.process_time()
            load = os.getloadavg()[0]
            table2 = measure(budget.throughput, logging.info)
            table2["seconds"] = round(time.time() - unit_start, 1)
            table2["cpu_seconds"] = round(time.process_time() - cpu_start, 1)
            table2["load_average"] = round((load + os.getloadavg()[0]) / 2, 2)
            write_json_atomically(os.path.join(output_dir, TABLE2_FILE), table2)
        progress.finished("Table 2 timing", table2["seconds"] if fresh else None)
    write_report(final=True)
    logging.info("Wrote %s", results_md)
    return results_md


def main(argv: Sequence[str]) -> None:
    """The command line; a bad flag or budget is one line and exit 1 (`cli.run_script`)."""

    def run_from_flags() -> None:
        tables = parse_tables(FLAGS.tables)
        budget = BUDGETS[FLAGS.budget].with_overrides(FLAGS.steps, FLAGS.seeds)
        command = "python -m albert_tf.experiments.paper " + " ".join(
            shlex.quote(a) for a in sys.argv[1:])
        run(FLAGS.output_dir, tables, budget, command)

    cli.run_script("paper", argv, run_from_flags)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("paper"))
