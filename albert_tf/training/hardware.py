"""What this CPU offers for reduced precision, and which prediction graph each dtype runs.

bfloat16 pays off on a CPU only with bf16 units (x86 AVX512-BF16 or AMX-BF16, Arm BF16):
without them TensorFlow converts every bf16 matmul to float32 and back, so bf16 inference
is *slower* than float32 (benchmarks/RESULTS.md, "bfloat16 inference"). The default dtype
therefore stays float32 everywhere; `--dtype=bfloat16` is the user's choice, and a CPU
without the units gets a warning.

The prediction graph (tf.function, with or without XLA) is chosen per dtype from the
measurements in benchmarks/RESULTS.md ("Prediction graph"): see `PREDICT_JIT_COMPILE`.
"""

from __future__ import annotations

import functools
import platform

from absl import logging

# /proc/cpuinfo flags that mean bf16 matmul units: x86 (AVX512-BF16, AMX) and Arm (BF16).
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")

# --dtype → whether prediction XLA-compiles the model call (jit_compile), by whether the CPU
# has bf16 units. Measured on ALBERT-base, batch 8 × 128, 2 threads (benchmarks/RESULTS.md
# "Prediction graph"): float32 runs at the same speed in both graphs (XLA within 3 %) but XLA
# compiles once per padded length, so the plain graph wins a prediction run; bfloat16 with
# XLA is slower than the plain graph on this AVX2 CPU and, per issue 15's measurement, ≈ 2×
# slower on an AVX512-BF16 one (XLA:CPU has no fast bf16 dot; oneDNN has). float16 has no
# fast CPU path at all; it is kept on the plain graph.
PREDICT_JIT_COMPILE = {
    ("float32", False): False, ("float32", True): False,
    ("bfloat16", False): False, ("bfloat16", True): False,
    ("float16", False): False, ("float16", True): False,
}


def _cpu_flags(cpuinfo: str) -> set[str]:
    """Every word on the `flags` (x86) and `Features` (Arm) lines of /proc/cpuinfo text."""
    words: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            words.update(value.split())
    return words


def bf16_units_in(cpuinfo: str) -> list[str]:
    """The bf16 flags present in /proc/cpuinfo text (empty: no bf16 units)."""
    flags = _cpu_flags(cpuinfo)
    return [flag for flag in BF16_CPU_FLAGS if flag in flags]


@functools.lru_cache(maxsize=1)
def cpu_bf16_units() -> list[str] | None:
    """This CPU's bf16 feature flags ([] when it has none), or None when unknown (no
    /proc/cpuinfo: not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return bf16_units_in(f.read())
    except OSError:
        return None


def describe_bf16_support() -> str:
    """One line for logs and benchmarks: does this CPU have bf16 units?"""
    units = cpu_bf16_units()
    if units is None:
        return f"bf16 units of this CPU ({platform.machine()}): unknown (no /proc/cpuinfo)"
    if units:
        return f"this CPU has bf16 units ({', '.join(units)}): bfloat16 matmuls run natively"
    return ("this CPU has no bf16 units (no avx512_bf16/amx_bf16/bf16 flag): bfloat16 "
            "matmuls are emulated in float32 and run slower than float32")


def predict_jit_compile(dtype: str) -> bool:
    """Whether prediction under `dtype` ("float32", "bfloat16", "float16") uses XLA."""
    return PREDICT_JIT_COMPILE[(dtype, bool(cpu_bf16_units()))]


def warn_if_slow_dtype(dtype: str, on_cpu: bool = True) -> None:
    """Logs a warning when `dtype` is bfloat16 and runs on a CPU known to lack bf16 units."""
    if dtype == "bfloat16" and on_cpu and cpu_bf16_units() == []:
        logging.warning("--dtype=bfloat16: %s; float32 is faster here (and the default)",
                        describe_bf16_support())
