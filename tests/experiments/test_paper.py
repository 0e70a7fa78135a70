"""The paper harness end to end on the tiny budget (a few steps per model, one seed; here with
length-32 sequences and one dev batch: fewer padded lengths to trace per model): every
table is built, verdicts follow the rules' vocabulary, finished work is never redone, and a
changed budget or bad flag is refused in one line. The real run is a benchmark
(benchmarks/paper/), not a test.

Table 5's four models (and Table 2's timing) really pretrain, evaluate and fine-tune. The five
models only Tables 3 and 4 add go through the same harness (configs, parameter counts, stage
files, results, tables, verdicts, curves) with their three training stages stubbed: each
returns the real sop_E8_all run's stage result, shifted per model, and copies its pretraining
directory. Training a model is what Table 5 already covers; 5 more real ones cost ~2 min."""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import shutil
import warnings

import pytest

from albert_tf.experiments import paper, runs, tables
from albert_tf.experiments import verdicts as V
from albert_tf.experiments.budget import TINY
from albert_tf.experiments.files import read_json
from tests.training import processes

# Slow tier (make test-all): the paper harness end to end (≈5 min on 2 cores);
# tests/experiments/test_verdicts.py, test_data.py and test_curves.py cover its parts fast.
pytestmark = pytest.mark.slow

ALL_TABLES = [2, 3, 4, 5]
REAL_TABLES = [2, 5]  # trained for real; Tables 3 and 4 add five models with stubbed stages
# The harness, not the numbers, is under test: TINY with length-32 sequences (fine-tuning traces
# one or two bucket lengths instead of up to four) and a dev set of one eval batch.
BUDGET = dataclasses.replace(TINY, max_seq_length=32, max_predictions_per_seq=5, glue_dev=16)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    output_dir = str(tmp_path_factory.mktemp("paper_tiny"))
    # Nine models × 3 steps: tracing their tf.functions costs more than running them eagerly
    # (Table 5 alone: 53 → 29 CPU-s); the harness, not graph mode, is under test here.
    import tensorflow as tf

    was_eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    command = "python -m albert_tf.experiments.paper --budget=tiny"
    # Eager runs make garbage fast, and each full collection also walks every object the
    # worker's earlier test files left alive (20 s of collections in a full run, 2.5 s alone):
    # those are set aside (gc.freeze) while the harness runs, and handed back after.
    gc.collect()
    gc.freeze()
    try:
        with warnings.catch_warnings():  # tf.data's functions stay graphs: known, not news
            warnings.filterwarnings("ignore", "Even though the `tf.config.experimental_run_functions_eagerly`")
            paper.run(output_dir, REAL_TABLES, BUDGET, command)
    finally:
        tf.config.run_functions_eagerly(was_eager)
        gc.unfreeze()
    with pytest.MonkeyPatch.context() as patch:
        stub_training_stages(patch, os.path.join(output_dir, "runs"))
        results_md = paper.run(output_dir, ALL_TABLES, BUDGET, command)
    with open(results_md, encoding="utf-8") as f:
        return output_dir, f.read()


def stub_training_stages(patch: pytest.MonkeyPatch, runs_dir: str) -> None:
    """runs.pretrain / evaluate / finetune for the models Table 5 did not train: the real
    sop_E8_all stage results, shifted by a per-model step (distinct values for the verdicts),
    and its pretraining directory copied (checkpoint and curve, for the init and the plots)."""
    source = os.path.join(runs_dir, f"sop_E{BUDGET.factorized_embedding_size}_all_seed1")
    models = []

    def shifted(stage: str, spec) -> dict:
        if spec.name not in models:
            models.append(spec.name)
        step = 0.01 * len(models)
        real = read_json(os.path.join(source, f"{stage}.json"))
        return {k: (v + step if isinstance(v, float) else v) for k, v in real.items()
                if k not in ("seconds", "cpu_seconds", "load_average")}

    def pretrain(spec, config_path, output_dir, budget, data):
        shutil.copytree(os.path.join(source, "pretrain"), output_dir, dirs_exist_ok=True)
        return shifted("pretrain", spec)

    patch.setattr(runs, "pretrain", pretrain)
    patch.setattr(runs, "evaluate", lambda spec, *args: shifted("heldout", spec))
    patch.setattr(runs, "finetune", lambda spec, *args: shifted("finetune", spec))


def verdict_rows(markdown: str) -> list[list[str]]:
    section = markdown.split("## Verdicts")[1].split("Rules (fixed")[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| Table")]


def test_results_hold_every_table_and_a_verdict_per_claim(tiny_run):
    output_dir, markdown = tiny_run
    assert "Status: complete" in markdown
    assert "Command: `python -m albert_tf.experiments.paper --budget=tiny`" in markdown
    assert re.search(r"load average \d+\.\d–\d+\.\d", markdown)
    for title in ("Table 2 —", "Table 3 —", "Table 4 —", "Table 5 —"):
        assert f"## {title}" in markdown
    rows = verdict_rows(markdown)
    # Claims: Table 2: 1; Table 3: 2 sharings × 2 metrics; Table 4: 2 claims × 2 metrics; Table 5: 8.
    assert [r[0] for r in rows] == ["2"] + ["3"] * 4 + ["4"] * 4 + ["5"] * 8
    for row in rows:
        assert row[3].strip("*") in (V.REPRODUCED, V.NOT_REPRODUCED, V.INCONCLUSIVE)
    # One seed: an ordering claim has no spread to be judged by.
    ordering = [r for r in rows if r[1].startswith("On SOP, the SOP-trained head beats")]
    assert ordering[0][3] == f"**{V.INCONCLUSIVE}**" and "no seed spread" in ordering[0][4]
    for table in (3, 4, 5):
        with open(os.path.join(output_dir, f"table{table}_curves.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_every_model_of_the_plan_has_its_result(tiny_run):
    output_dir, _ = tiny_run
    specs = tables.plan(ALL_TABLES, BUDGET)
    # Shared models run once: Table 5 (3 tasks + random init) + Table 4's attention, ffn,
    # none + Table 3's E=H rows for both sharings.
    assert len(specs) == 4 + 3 + 2
    for spec in specs:
        result = read_json(os.path.join(output_dir, "runs", spec.name, "result.json"))
        assert result["finetune"]["dev_accuracy"] >= 0
        if spec.pretrain:
            assert set(result["heldout"]) >= {"heldout_mlm_accuracy", "sop_probe_accuracy",
                                              "nsp_probe_accuracy", "sop_head_accuracy"}
            assert (result["heldout"]["sop_head_accuracy"] is None) == (spec.task == "none")
            assert os.path.exists(os.path.join(output_dir, "runs", spec.name, "pretrain",
                                               f"model.ckpt-{BUDGET.pretrain_steps}.index"))
    # Sharing everything saves (L − 1) layers: per layer 4(H² + H) attention, 2(HI) + I + H
    # FFN and two LayerNorms of 2H (H=16, I=32, L=2).
    h, i = BUDGET.model.hidden_size, BUDGET.model.intermediate_size
    layer = 4 * (h * h + h) + (2 * h * i + i + h) + 2 * 2 * h
    e = BUDGET.model.embedding_size
    shared = read_json(os.path.join(output_dir, "runs", f"sop_E{e}_all_seed1", "result.json"))
    unshared = read_json(os.path.join(output_dir, "runs", f"sop_E{e}_none_seed1", "result.json"))
    assert unshared["parameters"] - shared["parameters"] == (BUDGET.model.num_hidden_layers - 1) * layer
    table2 = read_json(os.path.join(output_dir, "table2", "result.json"))
    assert len(table2["wall_speedups"]) == BUDGET.throughput.rounds


def test_finished_work_is_read_back_not_redone(tiny_run, monkeypatch):
    output_dir, _ = tiny_run

    def must_not_run(*args, **kwargs):
        raise AssertionError("finished work was redone")

    for name in ("pretrain", "evaluate", "finetune"):
        monkeypatch.setattr(runs, name, must_not_run)
    import albert_tf.experiments.throughput as throughput
    monkeypatch.setattr(throughput, "measure", must_not_run)
    paper.run(output_dir, ALL_TABLES, BUDGET, "again")
    # A model whose fine-tuning did not finish redoes only that stage.
    spec = tables.plan([5], BUDGET)[0]
    run_dir = os.path.join(output_dir, "runs", spec.name)
    before = read_json(os.path.join(run_dir, "finetune.json"))
    os.remove(os.path.join(run_dir, "result.json"))
    os.remove(os.path.join(run_dir, "finetune.json"))
    monkeypatch.setattr(runs, "finetune", lambda *a, **k: {"dev_accuracy": 12.5, "dev_loss": 1.0})
    paper.run(output_dir, [5], BUDGET, "again")
    assert read_json(os.path.join(run_dir, "result.json"))["finetune"]["dev_accuracy"] == 12.5
    os.remove(os.path.join(run_dir, "result.json"))
    from albert_tf.experiments.files import write_json_atomically
    write_json_atomically(os.path.join(run_dir, "finetune.json"), before)


def test_another_budget_in_the_same_output_dir_is_refused(tiny_run):
    output_dir, _ = tiny_run
    with pytest.raises(paper.UsageError, match="budget.json: .* holds a run with another budget"):
        paper.run(output_dir, [5], BUDGET.with_overrides(steps=7), "different")


def test_bad_tables_flag_is_one_line(tmp_path):
    result = processes.run(["-m", "albert_tf.experiments.paper", f"--output_dir={tmp_path}",
                            "--tables=3,6"], timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == \
        "paper: error: --tables: expected numbers among (2, 3, 4, 5), got 3,6"
    assert not os.listdir(tmp_path)
