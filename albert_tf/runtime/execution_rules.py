"""Which TensorFlow execution path is fastest on each CPU profile (issue 30): oneDNN's graph
rewrites on or off, and XLA or the plain tf.function graph per step kind and dtype.

Two tables keyed by `hardware.cpu_profile`, measured by `benchmarks/model_speed.py`
(benchmarks/RESULTS.md, "Execution path per CPU profile"):

* `ONEDNN_ON`: TensorFlow turns its oneDNN rewrites on by itself only on CPUs with AVX512-VNNI,
  bf16 or AMX units; on an AVX2 CPU (AMD Zen, older Intel) it leaves them off, though there
  they make the ALBERT-base train step 1.16× and the forward pass 1.20× faster (and are what
  fuses MatMul + bias + GELU / residual). A tool sets `TF_ENABLE_ONEDNN_OPTS` from this
  table as it starts, before TensorFlow is imported (`start_tool`), unless the user set it.
* `XLA_SPEEDUP`: the XLA-compiled step's steady-state speed over the graph's, per step kind
  ("train": forward + backward; "predict": forward) and --dtype, with the table's oneDNN
  setting. `use_xla` picks XLA where it is faster *and* the run repays its compiles (one per
  padded input length, where the graph traces once for all). What was not measured is 1.0:
  the graph.
* `FROZEN_SPEEDUP`: prediction with the weights as graph constants over prediction reading
  the variables, per --dtype (`models.frozen_weights`). `freeze_for_prediction` freezes
  where that is faster and the run repays the freezing, which every run does anew.

Tests mock the profile (`profile=`); nothing here imports TensorFlow.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from albert_tf.runtime import hardware

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
STEP_KINDS = ("train", "predict")

# True: set TF_ENABLE_ONEDNN_OPTS=1; None: leave TensorFlow's own choice (unmeasured).
# x86-avx2: AMD EPYC Zen 3, 2 threads, ALBERT-base 8 × 128: train step 4.51 s → graph with
# oneDNN 1.16× faster than without (5.24 s), forward 1.85 → 1.55 s (1.20×). AVX-512 CPUs
# get oneDNN from TensorFlow itself where they have VNNI; those without take the same path.
ONEDNN_ON: dict[str, bool | None] = {
    hardware.PROFILE_AMX: True,
    hardware.PROFILE_AVX512: True,
    hardware.PROFILE_AVX2: True,
    hardware.PROFILE_ARM: None,
}

# XLA over the graph, steady state, ALBERT-base 8 × 128, 2 threads (the lower of the runs kept).
# x86-avx2 (AMD EPYC Zen 3, oneDNN on): predict float32 1.13× (1.14× with oneDNN off),
#   bfloat16 1.15× / 1.25× (XLA:CPU fuses the emulation's conversions); train float32 level
#   (0.96× / 1.05×: the graph, no compile to repay), bfloat16 1.21×.
# x86-avx512-bf16 (Xeon with AMX, 2 threads, issue 30's own run on one, oneDNN on): XLA:CPU
#   does not take the AMX kernels (a bf16 2048² matmul 24 % of the graph's peak), so bf16 XLA
#   is 2–2.5× *slower*: train 2180 vs 885 ms (0.41×), predict 732 vs 374 ms (0.51×); float32
#   train 2056 vs 1976 ms (0.96×), predict 709 vs 672 ms (0.95×): the graph everywhere.
# x86-avx512 without bf16 units and arm64: not measured, the graph.
XLA_SPEEDUP: dict[str, dict[tuple[str, str], float]] = {
    hardware.PROFILE_AVX2: {
        ("predict", "float32"): 1.13, ("predict", "bfloat16"): 1.15,
        ("train", "float32"): 1.0, ("train", "bfloat16"): 1.2,
    },
    hardware.PROFILE_AMX: {
        ("predict", "float32"): 0.95, ("predict", "bfloat16"): 0.51,
        ("train", "float32"): 0.96, ("train", "bfloat16"): 0.41,
    },
    hardware.PROFILE_AVX512: {},
    hardware.PROFILE_ARM: {},
}
# A first call — the graph's one trace, or XLA's compile of one padded length — costs about
# this many steady-state steps (ALBERT-base 8 × 128: 2.3–7.0 for prediction, ≈ 3–4 train steps).
FIRST_CALL_STEPS = 7.0

# Prediction on frozen weights over the variables' graph, steady state, ALBERT-base 8 × 128,
# 2 threads, the graph (not XLA); benchmarks/frozen_prediction.py. x86-avx512-bf16 (Xeon with
# AMX): bfloat16 1.49× and 1.39× in two runs (410 → 275, 385 → 277 ms a batch: oneDNN runs bf16
# inner products on constant weights with its AMX brgemm kernel, on variables with its gemm
# one, and casts variables every call), float32 level at batch 8 (1.0; the frozen graph is
# 1.25× at batch 1). Not measured elsewhere: the variables.
FROZEN_SPEEDUP: dict[str, dict[str, float]] = {
    hardware.PROFILE_AMX: {"bfloat16": 1.49},
    hardware.PROFILE_AVX512: {},
    hardware.PROFILE_AVX2: {},
    hardware.PROFILE_ARM: {},
}
# Freezing — tracing, folding the weights in, the first call's graph rewrites — costs about
# this many steady-state steps (ALBERT-base bf16 on that Xeon: 6.0 s = 15 batches of 410 ms,
# 4.9 s = 12.7 of 385 ms; both runs break even at 45–46 batches).
FREEZE_STEPS = 15.0


def choose_onednn(environ: MutableMapping[str, str] | None = None,
                  profile: str | None = None) -> str | None:
    """Sets TF_ENABLE_ONEDNN_OPTS in `environ` (default: this process's) from `ONEDNN_ON`
    unless it is set already; returns the value it set, or None. Call before TensorFlow is
    imported: TensorFlow reads the variable once, at import."""
    environ = os.environ if environ is None else environ
    if ONEDNN_ENV in environ:
        return None
    choice = ONEDNN_ON.get(profile or hardware.cpu_profile())
    if choice is None:
        return None
    environ[ONEDNN_ENV] = "1" if choice else "0"
    return environ[ONEDNN_ENV]


def start_tool(environ: MutableMapping[str, str] | None = None,
               profile: str | None = None) -> dict[str, str]:
    """The execution choices a tool makes as it starts, before TensorFlow is imported (which
    reads them once): `choose_onednn`. Returns {variable: value} of what it set.

    Every command's first import runs it when the importer is the program (the only code a
    tool runs before its first TensorFlow import: `quiet_startup`'s program start, which then
    quiets the log); a program of ours outside the package (a benchmark) calls it itself."""
    onednn = choose_onednn(environ, profile)
    return {} if onednn is None else {ONEDNN_ENV: onednn}


def xla_speedup(step: str, dtype: str, profile: str | None = None) -> float:
    """XLA's measured steady-state speedup over the graph (1.0 where not measured)."""
    if step not in STEP_KINDS:
        raise ValueError(f"step must be one of {STEP_KINDS}, got {step!r}")
    return XLA_SPEEDUP.get(profile or hardware.cpu_profile(), {}).get((step, dtype), 1.0)


def use_xla(step: str, dtype: str, num_steps: int | None, num_lengths: int = 1,
            profile: str | None = None) -> bool:
    """Whether a CPU run of `num_steps` `step`s under `dtype`, over `num_lengths` padded
    input lengths, is faster XLA-compiled: XLA must be faster in steady state and the time it
    saves must repay its compiles beyond the graph's one trace. Unknown size (None or 0): the
    graph."""
    speedup = xla_speedup(step, dtype, profile)
    if speedup <= 1.0 or not num_steps:
        return False
    saved = num_steps * (1.0 - 1.0 / speedup)  # in steady-state steps of the graph
    return saved > FIRST_CALL_STEPS * max(num_lengths - 1, 0) + 1.0


def freeze_for_prediction(dtype: str, num_steps: int | None, profile: str | None = None) -> bool:
    """Whether a CPU prediction run of `num_steps` batches under `dtype` is faster on frozen
    weights: faster in steady state, and by more than the freezing costs. Unknown size: no."""
    speedup = FROZEN_SPEEDUP.get(profile or hardware.cpu_profile(), {}).get(dtype, 1.0)
    if speedup <= 1.0 or not num_steps:
        return False
    return num_steps * (1.0 - 1.0 / speedup) > FREEZE_STEPS
