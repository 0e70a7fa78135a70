"""benchmarks/model_speed.py's verdicts, from hand-made timings: the share of the matmul peak
and the ratios it prints, and the bf16 targets only where the CPU has bf16 units (a mocked
CPU): elsewhere both sides emulate bf16 and the figures are printed without a target."""

import argparse
import importlib
import os
import sys
from pathlib import Path
from unittest import mock

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")


@pytest.fixture(scope="module")
def model_speed():
    """The script as a module; the oneDNN variable its import sets is not left to other tests."""
    sys.path.insert(0, BENCHMARKS)
    try:
        with mock.patch.dict(os.environ):
            yield importlib.import_module("model_speed")
    finally:
        sys.path.remove(BENCHMARKS)


def candidate(model_speed, name, kind, flops, seconds, dtype, sequences=8):
    c = model_speed.Candidate(name, kind, step=lambda: None, flops=flops, sequences=sequences,
                              dtype=dtype)
    c.samples = [model_speed.Sample(wall=seconds, cpu=seconds, foreign=0.0)] * 3
    return c


def bf16_run(model_speed):
    """A bf16 run: a 100 GFLOP/s bf16 matmul, the export at 1.5 s for 90 GFLOP (60 GFLOP/s,
    60 % of the peak), its serving/ graph at 1.2 s (75 %), keras-hub bf16 at 2.4 s."""
    gflop = 1e9
    return [
        candidate(model_speed, "matmul 2048² bf16 tf.function", "matmul", 100 * gflop, 1.0,
                  "bfloat16", 0),
        candidate(model_speed, "ours export bf16 (SavedModel)", "forward", 90 * gflop, 1.5,
                  "bfloat16"),
        candidate(model_speed, "ours export bf16 serving/ (frozen SavedModel)", "forward",
                  90 * gflop, 1.2, "bfloat16"),
        candidate(model_speed, "keras-hub fwd bf16 graph", "forward", 90 * gflop, 2.4, "bfloat16"),
    ]


def report_lines(model_speed, units, capsys) -> list[str]:
    args = argparse.Namespace(quiet=0.1)
    flops = {"encoder_forward": 90e9, "train_step": 270e9, "pretrainer_forward": 90e9}
    with mock.patch.object(model_speed, "has_bf16_units", return_value=bool(units)):
        model_speed.report(bf16_run(model_speed), flops, args)
    return capsys.readouterr().out.splitlines()


def lines_with(lines, text):
    return [line for line in lines if text in line]


def test_with_bf16_units_the_export_is_held_to_60_percent_and_1_2x_keras_hub(model_speed, capsys):
    lines = report_lines(model_speed, ["amx_bf16"], capsys)
    peak = lines_with(lines, "BF16 PATH vs bf16 matmul peak")
    assert peak == [
        "BF16 PATH vs bf16 matmul peak: ours export bf16 (SavedModel): 60% of 100 GFLOP/s"
        " — target ≥ 60%: met",
        "BF16 PATH vs bf16 matmul peak: ours export bf16 serving/ (frozen SavedModel): 75% of"
        " 100 GFLOP/s — target ≥ 60%: met"]
    keras_hub = lines_with(lines, "BF16 PATH vs keras-hub")
    assert keras_hub[0].endswith("1.60× (1.60× best vs best) — target ≥ 1.2×: met")
    assert keras_hub[1].endswith("2.00× (2.00× best vs best) — target ≥ 1.2×: met")


def test_without_bf16_units_the_figures_come_without_a_target(model_speed, capsys):
    lines = report_lines(model_speed, [], capsys)
    bf16 = lines_with(lines, "BF16 PATH")
    assert len(bf16) == 4 and not lines_with(lines, "target ≥")
    assert all("(emulated: no bf16 units, no target)" in line for line in bf16)
    assert "ours export bf16 (SavedModel): 60% of 100 GFLOP/s" in lines_with(bf16, "peak")[0]
