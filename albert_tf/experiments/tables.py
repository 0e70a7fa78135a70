"""Which models each table needs, and its rows and verdicts from their results.

Every model is a `RunSpec`; equal specs are one run shared by the tables that need it (the
base model — SOP, all shared, the toy E — is Table 5's SOP row, Table 4's "all" row and one
of Table 3's rows). Tables 3 and 4 train one seed per row and judge their differences
against the base model's spread over Table 5's seeds, which they therefore also run.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping, Sequence

from albert_tf.experiments import paper_numbers as paper
from albert_tf.experiments import verdicts as V
from albert_tf.experiments.budget import Budget
from albert_tf.experiments.specs import RunSpec

TABLES = (2, 3, 4, 5)
SENTENCE_ROWS = ("none", "nsp", "sop")
SHARING_NAMES = {"all": "all-shared", "attention": "shared-attention", "ffn": "shared-FFN",
                 "none": "not-shared"}
Results = Mapping[str, Mapping[str, Any]]  # run name → its result.json


def base_specs(budget: Budget) -> list[RunSpec]:
    return [RunSpec("sop", budget.model.embedding_size, "all", seed) for seed in budget.seeds]


def specs_of(table: int, budget: Budget) -> list[RunSpec]:
    """The models `table` reads (Table 2 needs none: it times two shapes)."""
    e, first = budget.model.embedding_size, budget.seeds[0]
    if table == 5:
        return ([RunSpec(task, e, "all", seed) for task in SENTENCE_ROWS for seed in budget.seeds]
                + [RunSpec("sop", e, "all", first, pretrain=False)])
    if table == 4:
        return [RunSpec("sop", e, mode, first) for mode in budget.sharing_modes] + base_specs(budget)
    if table == 3:
        return ([RunSpec("sop", size, mode, first) for mode in ("all", "none")
                 for size in budget.embedding_sizes] + base_specs(budget))
    return []


def plan(tables: Sequence[int], budget: Budget) -> list[RunSpec]:
    """Unique specs in running order: Table 5 first (its seeds are every table's noise)."""
    ordered: list[RunSpec] = []
    for table in sorted(tables, reverse=True):
        for spec in specs_of(table, budget):
            if spec not in ordered:
                ordered.append(spec)
    return ordered


# ----- values -----
def _metric(result: Mapping[str, Any], metric: str) -> float:
    """A result's metric: dev_accuracy, heldout_mlm_accuracy, {sop,nsp}_{head,probe}_accuracy."""
    if metric == "dev_accuracy":
        return float(result["finetune"]["dev_accuracy"])
    value = result.get("heldout", {}).get(metric)
    return float("nan") if value is None else float(value)


def values(results: Results, specs: Sequence[RunSpec], metric: str) -> list[float]:
    return [_metric(results[s.name], metric) for s in specs if s.name in results]


def cell(vals: Sequence[float]) -> str:
    """"mean" for one value, "mean (min–max)" for several; "—" when missing."""
    vals = [v for v in vals if v == v]
    if not vals:
        return "—"
    if len(vals) == 1:
        return f"{vals[0]:.1f}"
    return f"{statistics.mean(vals):.1f} ({min(vals):.1f}–{max(vals):.1f})"


def _paper(value: float | None, fmt: str = "{:.1f}") -> str:
    return "—" if value is None else fmt.format(value)


def base_spread(results: Results, budget: Budget, metric: str) -> float | None:
    return V.spread(values(results, base_specs(budget), metric))


def count(parameters: float) -> str:
    """12.3k / 17.7M: parameter counts as the paper writes them."""
    if parameters >= 1e6:
        return f"{parameters / 1e6:.1f}M"
    return f"{parameters / 1e3:.1f}k"


def _params(results: Results, spec: RunSpec) -> str:
    result = results.get(spec.name)
    return "—" if result is None else count(result["parameters"])


# ----- Table 5 -----
def table5(results: Results, budget: Budget) -> tuple[list[str], list[V.Verdict]]:
    e = budget.model.embedding_size
    rows = {task: [RunSpec(task, e, "all", s) for s in budget.seeds] for task in SENTENCE_ROWS}
    lines = ["| Pretraining sentence task | Held-out MLM acc | NSP acc (own head) | "
             "SOP acc (own head) | NSP acc (probe) | SOP acc (probe) | Corpus-task dev acc | "
             "Paper: MLM | NSP | SOP | Avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for task, specs in rows.items():
        published = paper.TABLE5[task]
        lines.append("| " + " | ".join([
            {"none": "None (MLM only)", "nsp": "NSP", "sop": "SOP"}[task],
            cell(values(results, specs, "heldout_mlm_accuracy")),
            cell(values(results, specs, "nsp_head_accuracy")),
            cell(values(results, specs, "sop_head_accuracy")),
            cell(values(results, specs, "nsp_probe_accuracy")),
            cell(values(results, specs, "sop_probe_accuracy")),
            cell(values(results, specs, "dev_accuracy")),
            *(_paper(published[k]) for k in ("mlm", "nsp", "sop", "avg"))]) + " |")
    random_init = [RunSpec("sop", e, "all", budget.seeds[0], pretrain=False)]
    lines.append(f"| (no pretraining: random init) | | | | | | "
                 f"{cell(values(results, random_init, 'dev_accuracy'))} | | | | |")

    def v(task: str, metric: str) -> list[float]:
        return values(results, rows[task], metric)

    t = "5"
    verdicts = [
        V.near_chance(t, "NSP does not solve SOP: the NSP-trained head is near chance on SOP",
                      "52.0", v("nsp", "sop_head_accuracy")),
        V.clearly_above_chance(t, "SOP is learned: the SOP-trained head on SOP", "86.5",
                               v("sop", "sop_head_accuracy")),
        V.clearly_above_chance(t, "SOP solves NSP: the SOP-trained head on NSP", "78.9",
                               v("sop", "nsp_head_accuracy")),
        V.greater(t, "On SOP, the SOP-trained head beats the NSP-trained head", "86.5 vs 52.0",
                  v("sop", "sop_head_accuracy"), v("nsp", "sop_head_accuracy")),
        V.greater(t, "On NSP, the NSP-trained head beats the SOP-trained head", "90.5 vs 78.9",
                  v("nsp", "nsp_head_accuracy"), v("sop", "nsp_head_accuracy")),
        V.near_chance(t, "Without a sentence task, SOP is near chance (linear probe)", "53.3",
                      v("none", "sop_probe_accuracy")),
        V.greater(t, "Downstream: SOP pretraining beats NSP pretraining (corpus task)",
                  "Avg 80.1 vs 79.2", v("sop", "dev_accuracy"), v("nsp", "dev_accuracy")),
        V.greater(t, "Downstream: SOP pretraining beats no sentence task (corpus task)",
                  "Avg 80.1 vs 79.0", v("sop", "dev_accuracy"), v("none", "dev_accuracy")),
    ]
    return lines, verdicts


# ----- Table 4 -----
def table4(results: Results, budget: Budget) -> tuple[list[str], list[V.Verdict]]:
    e, first = budget.model.embedding_size, budget.seeds[0]
    spec = {mode: RunSpec("sop", e, mode, first) for mode in budget.sharing_modes}
    lines = [f"| Sharing (ours: E={e}, H={budget.model.hidden_size}, seed {first}) | Parameters | "
             f"Held-out MLM acc | Corpus-task dev acc | Paper (E={paper.TABLE4_EMBEDDING_SIZE}): "
             f"Parameters | Avg |", "|---|---|---|---|---|---|"]
    for mode, s in spec.items():
        params, avg = paper.TABLE4[mode]
        lines.append(f"| {SHARING_NAMES[mode]} | {_params(results, s)} | "
                     f"{cell(values(results, [s], 'heldout_mlm_accuracy'))} | "
                     f"{cell(values(results, [s], 'dev_accuracy'))} | {params}M | {_paper(avg)} |")
    verdicts = []
    for metric, label in (("dev_accuracy", "corpus task"), ("heldout_mlm_accuracy", "held-out MLM")):
        noise = base_spread(results, budget, metric)

        def v(mode: str, metric: str = metric) -> list[float]:
            return values(results, [spec[mode]], metric)

        verdicts += [
            V.loses_little("4", f"All-shared loses little against not-shared ({label})",
                           "Avg 80.1 vs 81.6 (12M vs 89M)", v("all"), v("none"), noise),
            V.greater("4", f"Sharing FFN costs more than sharing attention ({label}): "
                      f"shared-attention > shared-FFN", "Avg 81.7 vs shared-FFN lower",
                      v("attention"), v("ffn"), noise)]
    return lines, verdicts


# ----- Table 3 -----
def table3(results: Results, budget: Budget) -> tuple[list[str], list[V.Verdict]]:
    first, h = budget.seeds[0], budget.model.hidden_size
    lines = [f"| Sharing | E (ours, H={h}) | Parameters | Held-out MLM acc | Corpus-task dev acc | "
             "Paper: E (H=768) | Parameters | Avg |", "|---|---|---|---|---|---|---|---|"]
    sizes = list(budget.embedding_sizes)
    paper_sizes = list(paper.TABLE3_EMBEDDING_SIZES)[-len(sizes):] if len(sizes) <= 4 else []
    for mode in ("none", "all"):
        for k, size in enumerate(sizes):
            s = RunSpec("sop", size, mode, first)
            paper_e = paper_sizes[k] if k < len(paper_sizes) else None
            params, avg = paper.TABLE3.get((mode, paper_e), (None, None))
            lines.append(f"| {SHARING_NAMES[mode]} | {size} | {_params(results, s)} | "
                         f"{cell(values(results, [s], 'heldout_mlm_accuracy'))} | "
                         f"{cell(values(results, [s], 'dev_accuracy'))} | {paper_e or '—'} | "
                         f"{_paper(params, '{}M')} | {_paper(avg)} |")
    small, full = budget.factorized_embedding_size, h
    verdicts = []
    for metric, label in (("dev_accuracy", "corpus task"), ("heldout_mlm_accuracy", "held-out MLM")):
        noise = base_spread(results, budget, metric)
        for mode, quote in (("all", "Avg 80.1 (E=128) vs 79.8 (E=768)"),
                            ("none", "Avg 81.7 (E=128) vs 82.3 (E=768)")):
            verdicts.append(V.loses_little(
                "3", f"{SHARING_NAMES[mode]}: factorized E={small} loses little against "
                f"E=H={full} ({label})", quote,
                values(results, [RunSpec("sop", small, mode, first)], metric),
                values(results, [RunSpec("sop", full, mode, first)], metric), noise))
    return lines, verdicts


# ----- Table 2 -----
def _speedups(median: float, rounds: Sequence[float]) -> str:
    return f"{median:.2f}× (" + ", ".join(f"{r:.2f}" for r in rounds) + ")"


def table2(result: Mapping[str, Any] | None, budget: Budget) -> tuple[list[str], list[V.Verdict]]:
    shapes = budget.throughput
    lines = [f"| Model (L={shapes.num_hidden_layers}, H={shapes.hidden_size}) | Parameters | "
             "Wall s/step (median) | CPU s/step (median) | Speedup, wall (per round) | "
             "Speedup, CPU (per round) | Paper: Parameters | Speedup |", "|---|---|---|---|---|---|---|---|"]
    if result is None:
        return lines + ["| (not measured yet) | | | | | | | |"], []
    for name in ("BERT-large", "ALBERT-large"):
        params, speedup = paper.TABLE2[name]
        if name == "ALBERT-large":
            wall = _speedups(result["median_wall_speedup"], result["wall_speedups"])
            cpu = _speedups(result["median_cpu_speedup"], result["cpu_speedups"])
        else:
            wall = cpu = "1.00× (reference)"
        lines.append(f"| {name} | {count(result['parameters'][name])} | "
                     f"{statistics.median(result['wall_seconds_per_step'][name]):.2f} | "
                     f"{statistics.median(result['cpu_seconds_per_step'][name]):.2f} | "
                     f"{wall} | {cpu} | {params}M | {speedup:.1f}× |")
    verdict = V.faster("2", "ALBERT-large trains faster than BERT-large (same L, H, batch, length)",
                       "1.7×", result["wall_speedups"])
    return lines, [verdict]


TABLE_BUILDERS: dict[int, Callable[..., tuple[list[str], list[V.Verdict]]]] = {
    3: table3, 4: table4, 5: table5}
