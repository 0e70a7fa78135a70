"""results.md of a paper run: command, budget, machine, runtimes, verdicts, the tables, curves.

Written after every finished model (so a long run shows its progress) and at the end; the
lead can commit the final file as it is: everything it states is computed here.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import statistics
from typing import Any, Mapping, Sequence

from albert_tf.runtime import paths
from albert_tf.experiments import tables as T
from albert_tf.experiments import verdicts as V
from albert_tf.experiments.budget import Budget
from albert_tf.experiments.data import ExperimentData
from albert_tf.experiments.plots import plot_runs
from albert_tf.experiments.runs import CURVE_FILE, read_curve
from albert_tf.experiments.specs import RunSpec

TITLES = {
    2: "Table 2 — training throughput, ALBERT-large vs BERT-large shapes",
    3: "Table 3 — factorized embedding: E at fixed H",
    4: "Table 4 — cross-layer sharing: all / attention / FFN / none",
    5: "Table 5 — sentence-prediction task: none / NSP / SOP",
}


@dataclasses.dataclass
class RunInfo:
    """Facts about the invocation that results.md states."""

    command: str
    started: str
    wall_seconds: float
    load_samples: list[float]  # 1-minute load average at the start and after each unit
    data_seconds: float | None
    done: int
    total: int


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _stage_loads(results: Mapping[str, Mapping[str, Any]], specs: Sequence[RunSpec]) -> list[float]:
    return [results[s.name][stage]["load_average"] for s in specs if s.name in results
            for stage in ("pretrain", "heldout", "finetune") if stage in results[s.name]]


def runtime_lines(tables: Sequence[int], budget: Budget, results, table2: Mapping | None,
                  info: RunInfo) -> list[str]:
    """Per table: wall time, process CPU time (an idle 2-core machine needs between half
    of it and all of it as wall time) and the load it ran under."""
    lines = []
    for table in sorted(tables):
        if table == 2:
            if table2:
                lines.append(f"  - Table 2: {_minutes(table2['seconds'])} wall, "
                             f"{_minutes(table2['cpu_seconds'])} CPU, load average "
                             f"{table2['load_average']:.1f}")
            continue
        specs = T.specs_of(table, budget)
        done = [results[s.name] for s in specs if s.name in results]
        loads = _stage_loads(results, specs)
        load = f", mean load average {statistics.mean(loads):.1f}" if loads else ""
        lines.append(f"  - Table {table}: {_minutes(sum(r['seconds'] for r in done))} wall, "
                     f"{_minutes(sum(r['cpu_seconds'] for r in done))} CPU for {len(done)}/"
                     f"{len(specs)} models{load}")
    if info.data_seconds is not None:
        lines.append(f"  - data preparation (shared): {_minutes(info.data_seconds)} wall")
    return lines


def setup_lines(budget: Budget, data: ExperimentData | None) -> list[str]:
    m = budget.model
    lines = [
        f"- Toy model (every table but 2): H={m.hidden_size}, L={m.num_hidden_layers}, "
        f"{m.num_attention_heads} heads, I={m.intermediate_size}, base E={m.embedding_size}, "
        f"all layers shared, V={m.vocab_size} SentencePiece pieces, initializer_range "
        f"{m.initializer_range}, no dropout — the demo's model (`make demo`).",
        f"- Pretraining (`run_pretraining.py`'s code path, in-process): {budget.pretrain_steps} "
        f"steps of batch {budget.pretrain_batch} × length {budget.max_seq_length} "
        f"({budget.max_predictions_per_seq} masked positions), LAMB, peak learning rate "
        f"{budget.pretrain_learning_rate:g}, {budget.pretrain_warmup} warm-up steps, linear "
        f"decay; the same budget, schedule and data order for every model of a table; seeds "
        f"{', '.join(map(str, budget.seeds))} (Tables 3–4: seed {budget.seeds[0]}).",
        f"- Fine-tuning (`run_classifier.py`'s code path, in-process) on the corpus task (MRPC "
        f"layout, `albert_tf.corpus.glue_task`: is b a condensed copy of a, or a sentence of "
        f"another document?): {budget.finetune_steps} steps of batch {budget.finetune_batch}, "
        f"AdamW, learning rate {budget.finetune_learning_rate:g}; accuracy on "
        f"{budget.glue_dev} dev pairs (from documents of their own).",
        "- Held-out evaluation: pairs made by `create_pretraining_data` from documents never "
        "pretrained on. MLM accuracy on pairs in text order (`--sentence_prediction=none`); "
        "NSP and SOP accuracy on `--sentence_prediction=nsp|sop --skip_single_sentence_chunks` "
        "pairs (a one-sentence chunk takes a random-document B in every task, Q10, so it would "
        "put NSP pairs into the SOP set). \"Own head\" is the model's pretrained 2-way head (what "
        "the paper reports); the MLM-only model has none, so every model is also scored by a "
        f"linear probe: logistic regression on the frozen pooled output, fitted on "
        f"{budget.probe_train} training-document pairs of the task.",
    ]
    if data is not None:
        lines.append(
            f"- Data: {data.documents['train']} documents pretrained on, {data.documents['heldout']} "
            f"held out; instances per task (training / held-out): " + ", ".join(
                f"{t} {data.train_instances[t]} / {data.heldout_instances[t]}"
                for t in data.train_instances) + ".")
    return lines


TABLE_NOTES = {
    2: ("On one CPU both shapes do the same arithmetic per step (ALBERT's shared layers are "
        "applied 24 times, and E=128 saves only the embedding projection), so the speedup here "
        "comes only from what scales with the parameter count — the LAMB update and the dense "
        "embedding gradient over 334M vs 18M parameters. The paper's 1.7× was measured on TPUs, "
        "where fewer parameters also mean less gradient communication and memory traffic; "
        "expect ≈1× here. Measured at a reduced batch and length so that the table fits its "
        "time box: see the column header and Setup."),
    3: ("Our E values are the paper's four sizes scaled to H (ratio order kept: the paper's "
        "64/128/256/768 at H=768 sit beside our rows in order). Verdicts compare E={small} "
        "(the paper's E=128 analogue) with E=H."),
    4: ("Our E is the toy model's; the paper's E=128 block is beside it. With L={layers} layers, "
        "sharing saves {saved} of {layers} layers' weights (the paper: 11 of 12), so the "
        "parameter ratios are smaller than the paper's."),
    5: ("Accuracies on held-out pairs; \"mean (min–max)\" over seeds. The paper's MLM/NSP/SOP "
        "figures are its intrinsic evaluation, its Avg the mean of five downstream tasks."),
}


def render(tables: Sequence[int], budget: Budget, data: ExperimentData | None,
           results: Mapping[str, Mapping[str, Any]], table2: Mapping[str, Any] | None,
           info: RunInfo, output_dir: str, draw: bool = True) -> str:
    """The whole results.md; also (re)draws the curve PNGs it links. draw=False (the progress
    reports written after each model) links the PNGs already drawn and draws none: drawing
    three figures per model would cost more than a tiny run's training."""
    sections, verdicts = [], []
    for table in sorted(tables, reverse=True):
        if table == 2:
            lines, table_verdicts = T.table2(table2, budget)
        else:
            lines, table_verdicts = T.TABLE_BUILDERS[table](results, budget)
        verdicts += table_verdicts
        note = TABLE_NOTES[table].format(small=budget.factorized_embedding_size,
                                         layers=budget.model.num_hidden_layers,
                                         saved=budget.model.num_hidden_layers - 1)
        section = [f"## {TITLES[table]}", "", *lines, "", note]
        if table == 2 and table2:
            shapes = budget.throughput
            section += ["", f"Batch {shapes.batch_size} × length {shapes.seq_length}, "
                        f"{shapes.rounds} alternating rounds of {shapes.steps_per_round} steps "
                        f"after {shapes.warmup_steps} warm-up step(s); wall clock and process "
                        f"CPU time. Paper: batch 4096 × length 512 on TPU v3."]
        png = _plot(table, budget, results, output_dir) if draw else _drawn(table, output_dir)
        if png:
            section += ["", f"![pretraining curves]({png})"]
        sections += section + [""]
    verdicts.sort(key=lambda v: v.table)
    status = ("complete" if info.done == info.total
              else f"partial — {info.done} of {info.total} units finished")
    loads = info.load_samples
    header = [
        "# ALBERT's claims at toy scale: Tables 2–5 of Lan et al. (ICLR 2020)", "",
        f"- Status: {status}; written {datetime.datetime.now().isoformat(timespec='seconds')} "
        f"(started {info.started}).",
        f"- Command: `{info.command}`",
        f"- Budget: `{budget.name}`"
        + (" — fixed from timing probes (seconds per step) before any outcome was seen; no "
           "setting was changed after looking at results." if budget.name == "full" else
           " — a harness check, not the benchmark budget: its numbers mean nothing."),
        f"- Machine: {os.cpu_count()} CPU cores ({platform.machine()}, {platform.system()}), "
        f"shared with other jobs: 1-minute load average {min(loads):.1f}–{max(loads):.1f} "
        f"(mean {statistics.mean(loads):.1f}) over this invocation.",
        f"- Runtime: this invocation {_minutes(info.wall_seconds)}; per table (the models it "
        f"reads, shared models counted in each table; CPU time is what an idle 2-core machine "
        f"would need between half of and all of as wall time):",
        *runtime_lines(tables, budget, results, table2, info), "",
        "## Verdicts", "",
        "| Table | Claim | Paper | Verdict | Why |", "|---|---|---|---|---|",
        *(f"| {v.table} | {v.claim} | {v.paper} | **{v.outcome}** | {v.reason} |" for v in verdicts),
        "", "Rules (fixed before the full run; applied by `albert_tf/experiments/verdicts.py`):", "",
        V.RULES.format(seeds=len(budget.seeds)), "",
        "## Setup", "", *setup_lines(budget, data), "",
    ]
    return "\n".join(header + sections).rstrip() + "\n"


def _drawn(table: int, output_dir: str) -> str | None:
    """The table's PNG name if an earlier report drew it, else None."""
    name = f"table{table}_curves.png"
    return name if paths.exists(os.path.join(output_dir, name)) else None


def _plot(table: int, budget: Budget, results, output_dir: str) -> str | None:
    """Draws the table's curves; the PNG's name relative to output_dir, or None."""
    if table == 2:
        return None
    curves = {}
    for spec in T.specs_of(table, budget):
        if not spec.pretrain or spec.name not in results:
            continue
        if table in (3, 4) and spec.seed != budget.seeds[0]:
            continue
        path = os.path.join(output_dir, "runs", spec.name, "pretrain", CURVE_FILE)
        curves[spec.name] = read_curve(path)
    name = f"table{table}_curves.png"
    if plot_runs(curves, os.path.join(output_dir, name), TITLES[table]):
        return name
    return None
