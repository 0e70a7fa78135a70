"""What this CPU offers for reduced precision, and which prediction graph each dtype runs.

bfloat16 pays off on a CPU only with bf16 units (x86 AVX512-BF16 or AMX-BF16, Arm BF16):
without them TensorFlow converts every bf16 matmul to float32 and back, so bf16 inference
is *slower* than float32 (benchmarks/RESULTS.md, "bfloat16 inference"). The default dtype
therefore stays float32 everywhere; `--dtype=bfloat16` is the user's choice, and a CPU
without the units gets a warning.

Which execution path (oneDNN on or off, XLA or the graph) each profile runs fastest is
`execution_rules`' table, keyed by `cpu_profile`.

The serving engine `load_serving(backend="auto")` picks is keyed by the CPU *profile*
(`cpu_profile`): AVX2 only, AVX-512 without bf16, AVX-512 with AMX/bf16, Arm. Every CPU fact
the project uses is read here from /proc/cpuinfo text, so tests mock a CPU by passing text.
"""

from __future__ import annotations

import functools
import os
import platform

from absl import logging

# /proc/cpuinfo flags that mean bf16 matmul units: x86 (AVX512-BF16, AMX) and Arm (BF16).
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
# Flags that mean int8 dot-product units: x86 VNNI (AVX-512 or AVX) and AMX-INT8; Arm's
# dot-product (asimddp) and int8 matmul (i8mm). Without them int8 kernels multiply u8·s8 pairs
# into saturating int16 (vpmaddubsw), which full-range int8 weights overflow.
INT8_DOT_CPU_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")

# Flags under which TensorFlow hands bfloat16 ops to oneDNN (its util.cc,
# IsDataTypeSupportedByOneDNNOnThisCPU: AVX512F or AVX_NE_CONVERT); elsewhere they stay Eigen ops.
ONEDNN_BF16_CPU_FLAGS = ("avx512f", "avx_ne_convert")

# The CPU profiles serving's engine table is keyed by (serving/auto_rule.py), most capable first.
PROFILE_AMX = "x86-avx512-bf16"       # AVX-512 with AVX512-BF16 or AMX-BF16 (Sapphire Rapids+)
PROFILE_AVX512 = "x86-avx512"         # AVX-512 without bf16 units (Skylake-SP .. Ice Lake)
PROFILE_AVX2 = "x86-avx2"             # AVX2 only (AMD Zen 1-3, older Intel); older x86 too
PROFILE_ARM = "arm64"                 # aarch64 (Graviton, Ampere), with or without bf16
CPU_PROFILES = (PROFILE_AMX, PROFILE_AVX512, PROFILE_AVX2, PROFILE_ARM)

def _cpu_flags(cpuinfo: str) -> set[str]:
    """Every word on the `flags` (x86) and `Features` (Arm) lines of /proc/cpuinfo text."""
    words: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            words.update(value.split())
    return words


@functools.lru_cache(maxsize=1)
def _this_cpuinfo() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags: from `cpuinfo` text when given (tests mock a CPU so), else
    from this machine's /proc/cpuinfo (empty where there is none)."""
    text = _this_cpuinfo() if cpuinfo is None else cpuinfo
    return frozenset(_cpu_flags(text or ""))


def bf16_units(flags: frozenset[str] | None = None) -> list[str]:
    """The CPU's bf16 unit flags (x86 AVX512-BF16/AMX-BF16, Arm BF16); empty: none. The one
    bf16 question of the package (`has_bf16_units` is its yes/no)."""
    flags = cpu_flags() if flags is None else flags
    return [flag for flag in BF16_CPU_FLAGS if flag in flags]


def has_bf16_units(flags: frozenset[str] | None = None) -> bool:
    """Whether the CPU multiplies bf16 natively (x86 AVX512-BF16/AMX-BF16, Arm BF16)."""
    return bool(bf16_units(flags))


def cpu_known() -> bool:
    """Whether this machine's CPU flags can be read (/proc/cpuinfo: Linux)."""
    return _this_cpuinfo() is not None


def has_int8_dot(flags: frozenset[str] | None = None) -> bool:
    """Whether the CPU has int8 dot-product units (VNNI, AMX-INT8, Arm dotprod/i8mm), which
    full-range int8 weights need to be exact."""
    flags = cpu_flags() if flags is None else flags
    return any(flag in flags for flag in INT8_DOT_CPU_FLAGS)


def onednn_runs_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether TensorFlow gives bfloat16 ops to oneDNN on this CPU (with oneDNN on)."""
    flags = cpu_flags() if flags is None else flags
    return any(flag in flags for flag in ONEDNN_BF16_CPU_FLAGS)


def cpu_profile(flags: frozenset[str] | None = None, machine: str | None = None) -> str:
    """This CPU's profile (one of CPU_PROFILES), from its flags and `platform.machine()`."""
    flags = cpu_flags() if flags is None else flags
    machine = (platform.machine() if machine is None else machine).lower()
    if machine in ("aarch64", "arm64") or "asimd" in flags:
        return PROFILE_ARM
    if "avx512f" in flags:
        return PROFILE_AMX if has_bf16_units(flags) else PROFILE_AVX512
    return PROFILE_AVX2


def describe_cpu(flags: frozenset[str] | None = None) -> str:
    """One line for logs and benchmarks: the profile, the reduced-precision units, and what
    bfloat16 does here (this machine's CPU when `flags` is None)."""
    if flags is None and not cpu_known():
        return f"CPU of {platform.machine()}: unknown (no /proc/cpuinfo), bf16 units unknown"
    flags = cpu_flags() if flags is None else flags
    units = [flag for flag in BF16_CPU_FLAGS + INT8_DOT_CPU_FLAGS if flag in flags]
    bf16 = ("bfloat16 matmuls run natively" if has_bf16_units(flags) else
            "no bf16 units (no avx512_bf16/amx_bf16/bf16 flag): bfloat16 matmuls are "
            "emulated in float32 and run slower than float32")
    return (f"CPU profile {cpu_profile(flags)} ({platform.machine()}): "
            f"{', '.join(units) if units else 'no bf16 or int8 dot-product units'}; {bf16}")


# Earlier names, kept working: each is the one API above.
def bf16_units_in(cpuinfo: str) -> list[str]:
    """`bf16_units` of /proc/cpuinfo text."""
    return bf16_units(cpu_flags(cpuinfo))


def cpu_bf16_units() -> list[str] | None:
    """`bf16_units()` of this CPU, or None when unknown (no /proc/cpuinfo: not Linux)."""
    return bf16_units() if cpu_known() else None


describe_bf16_support = describe_cpu


def warn_if_slow_dtype(dtype: str, on_cpu: bool = True) -> None:
    """Logs a warning when `dtype` is bfloat16 and runs on a CPU known to lack bf16 units."""
    if dtype == "bfloat16" and on_cpu and cpu_known() and not has_bf16_units():
        logging.warning("--dtype=bfloat16: %s; float32 is faster here (and the default)",
                        describe_cpu())


def has_nvidia_driver() -> bool:
    """Whether an NVIDIA driver is loaded (its /proc entry exists): TensorFlow then looks for
    CUDA, else its CUDA notices are noise (`quiet_startup`)."""
    return os.path.exists("/proc/driver/nvidia/version")
