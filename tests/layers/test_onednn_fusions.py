"""The oneDNN fusions Grappler makes of one encoder layer, pinned as they are (issue 30).

A child process with TF_ENABLE_ONEDNN_OPTS=1 (it must be set before TensorFlow is imported)
runs the tiny encoder's frozen serving graph and a pretrainer train step (forward + backward)
through benchmarks/onednn_fusions.py, in float32 and mixed bfloat16, and counts the ops of the
optimized graphs per encoder layer. A layer change that breaks (or adds) a fusion changes these
counts: update them on purpose, with the benchmark's table (`--layers 2 --hidden 768`) in the
issue note. Counts are per layer of the shared block (ops under `transformer/` / 2 layers); a
.5 is an op Grappler merged across the two applications (e.g. the mask's Cast).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
X86 = ("x86_64", "amd64", "i686", "i386", "x86")

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in X86,
    reason=f"TensorFlow's oneDNN graph rewrites are x86-only (this is {platform.machine()})")

CHILD = """
import json, sys
sys.path[:0] = [{repo!r}, {benchmarks!r}]
import onednn_fusions
from tests.conftest import tiny_config
results = onednn_fusions.measure(tiny_config(), dtypes=("float32", "bfloat16"), batch=2, seq=16)
print("RESULT " + json.dumps({{"bf16_on_onednn": onednn_fusions.onednn_bf16_on_this_cpu(),
                              **{{name: counts.layer for name, counts in results.items()}},
                              "xla": {{name: {{k: v for k, v in counts.total.items()
                                             if k.startswith("XLA[")}}
                                      for name, counts in results.items()}}}}))
"""

FUSED_PREFIXES = ("_MklNativeFused", "_MklFused", "_Fused", "_MklLayerNorm")

# --- float32: the same on every x86 CPU (oneDNN takes float32 ops everywhere) ----------------
SERVING_FLOAT32 = {
    # Q, K, V dense: MatMul+BiasAdd → _MklNativeFusedMatMul[BiasAdd].
    "_MklNativeFusedMatMul[BiasAdd]": 3,
    # FFN intermediate dense + tanh-GELU (tf.nn.gelu approximate=True) → one kernel.
    "_MklNativeFusedMatMul[BiasAdd,GeluApproximate]": 1,
    # Attention output and FFN output dense + bias + residual add. (The attention context is
    # reshaped with the tokens' own shape tensor: with -1 Grappler could not prove the two
    # addends' [B·S, H] shapes equal in the dynamic-shape serving graph and left the add.)
    "_MklNativeFusedMatMul[BiasAdd,Add]": 2,
    # scores = Q·Kᵀ · 1/√d + mask bias → _MklFusedBatchMatMulV2[Mul,Add].
    "_MklFusedBatchMatMulV2[Mul,Add]": 1,
    "_MklBatchMatMulV2": 1,  # probs · V (nothing to fuse)
    "_MklSoftmax": 1,
    # Not fused: both LayerNorms stay element-wise ((x − mean)/√(var + ε)·γ + β: 2 Mean,
    # Sub, Square, AddV2, Rsqrt, 2 Mul, AddV2 each); no _MklLayerNorm.
    "_MklLayerNorm": 0, "Mean": 4, "Rsqrt": 2, "Square": 2,
    "AddV2": 4,  # 2 LayerNorm ε adds + 2 LayerNorm β adds
    "Cast": 0.5,  # the input mask → float32, once for both layers
    "MatMul": 0, "_MklMatMul": 0, "BiasAdd": 0, "Tanh": 0, "BatchMatMulV2": 0,
}
TRAIN_FLOAT32 = {
    # All six dense layers: MatMul+BiasAdd. The residual add is not fused into the attention
    # and FFN output dense any more: it is part of the block's LayerNorm kernel (below), which
    # sums the two addends itself. The GELU does not fuse with its dense in training (its input
    # is kept for its gradient).
    "_MklNativeFusedMatMul[BiasAdd]": 6, "_MklNativeFusedMatMul[BiasAdd,Add]": 0,
    "_MklFusedBatchMatMulV2[Mul,Add]": 1,  # Q·Kᵀ · 1/√d + mask bias
    "_MklBatchMatMulV2": 5,  # probs·V, and 4 gradient batch matmuls
    "_MklMatMul": 12,  # the 6 dense layers' input and kernel gradients
    "_MklSoftmax": 1,
    "BiasAddGrad": 6,
    # Residual + LayerNorm and tanh-GELU, forward and gradient, are one XLA kernel each
    # (albert_tf.layers.fused_gradients; XLA_KERNELS below): none of their element-wise ops
    # (Mean, SquaredDifference, Rsqrt, Tanh, TanhGrad, RsqrtGrad) is left in the graph.
    "XLA[_residual_layer_norm_forward]": 2, "XLA[_gelu_tanh_forward]": 1,
    "_MklLayerNorm": 0, "Mean": 0, "SquaredDifference": 0, "Rsqrt": 0, "RsqrtGrad": 0,
    "Tanh": 0, "TanhGrad": 0,
    "Cast": 0.5,
    "MatMul": 0, "BiasAdd": 0, "BatchMatMulV2": 0,
}
# The whole tiny train step (2 layers of the shared block): each LayerNorm and GELU is one XLA
# kernel forward and one backward (albert_tf.layers.fused_gradients) — per layer the attention
# and FFN residual LayerNorms and the GELU; the embedding and MLM-head LayerNorms in float32.
# In mixed bfloat16 those two take bf16 input and keep TensorFlow's ops; serving graphs hold no
# XLA kernel.
XLA_KERNELS = {
    "train/float32": {"XLA[_residual_layer_norm_forward]": 4,
                      "XLA[_residual_layer_norm_backward]": 4,
                      "XLA[_layer_norm_forward]": 2, "XLA[_layer_norm_backward]": 2,
                      "XLA[_gelu_tanh_forward]": 2, "XLA[_gelu_tanh_backward]": 2},
    "train/bfloat16": {"XLA[_residual_layer_norm_forward]": 4,
                       "XLA[_residual_layer_norm_backward]": 4,
                       "XLA[_gelu_tanh_forward]": 2, "XLA[_gelu_tanh_backward]": 2},
    "serving/float32": {}, "serving/bfloat16": {},
}
# --- mixed bfloat16 where TensorFlow keeps bf16 off oneDNN (no AVX512F / AVX-NE-CONVERT) -----
# No fusion at all: the bf16 MatMuls and BatchMatMuls run as Eigen ops with separate BiasAdds,
# GELU and scale/mask ops, and float32 LayerNorm/softmax casts around them.
SERVING_BFLOAT16_NO_ONEDNN = {
    "MatMul": 6, "BiasAdd": 6, "BatchMatMulV2": 2, "Tanh": 1,
    "Cast": 8.5,  # into and out of the float32 islands (LayerNorm, softmax, residual)
    "_MklSoftmax": 1,  # float32 softmax is still oneDNN's
    "_MklLayerNorm": 0, "Mean": 4,
}
TRAIN_BFLOAT16_NO_ONEDNN = {
    "MatMul": 18, "BiasAdd": 6, "BiasAddGrad": 6, "BatchMatMulV2": 6,
    # The weights' casts to bf16 and their gradients' back, the scores' and probabilities'
    # casts around the float32 softmax; the residual LayerNorms' and GELU's casts are inside
    # their XLA kernels (28.5 since they are; 38.5 before — the same change as measured where
    # bf16 runs on oneDNN, below).
    "Cast": 28.5, "Tanh": 0, "Mean": 0,
    "_MklSoftmax": 1, "_MklLayerNorm": 0,
}
# --- mixed bfloat16 where bf16 ops run on oneDNN (AVX512F or AVX-NE-CONVERT: Xeons, Zen 4+) ----
# Measured on an Intel Xeon with AVX512-BF16 and AMX. The dense layers fuse with their bias (and
# the FFN's GELU in serving); the residual adds, the attention scale and mask and the softmax
# run in float32 after a cast (§2.9), so they do not fuse into the bf16 matmuls.
SERVING_BFLOAT16_ONEDNN = {
    "_MklNativeFusedMatMul[BiasAdd]": 5,  # Q, K, V, attention output, FFN output
    "_MklNativeFusedMatMul[BiasAdd,GeluApproximate]": 1,  # FFN intermediate + GELU
    "_MklNativeFusedMatMul[BiasAdd,Add]": 0, "_MklFusedBatchMatMulV2[Mul,Add]": 0,
    "_MklBatchMatMulV2": 2, "_MklSoftmax": 1,
    "Cast": 8.5,  # into and out of the float32 islands (LayerNorm, softmax, residual)
    "_MklLayerNorm": 0, "Mean": 4, "Rsqrt": 2,
    "MatMul": 0, "BiasAdd": 0, "BatchMatMulV2": 0, "Tanh": 0,
}
TRAIN_BFLOAT16_ONEDNN = {
    "_MklNativeFusedMatMul[BiasAdd]": 6, "_MklMatMul": 12, "_MklBatchMatMulV2": 6,
    "BiasAddGrad": 6, "_MklSoftmax": 1,
    "XLA[_residual_layer_norm_forward]": 2, "XLA[_gelu_tanh_forward]": 1,
    "Cast": 28.5, "Tanh": 0, "Mean": 0, "_MklLayerNorm": 0,
    "MatMul": 0, "BiasAdd": 0, "BatchMatMulV2": 0,
}


@functools.lru_cache(maxsize=None)
def measured() -> dict:
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="2")
    code = CHILD.format(repo=str(REPO), benchmarks=str(BENCHMARKS))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(out for out in result.stdout.splitlines() if out.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def fused(layer: dict) -> dict:
    return {k: v for k, v in layer.items() if k.startswith(FUSED_PREFIXES)}


def check(name: str, expected: dict) -> None:
    layer = measured()[name]
    got = {key: layer.get(key, 0) for key in expected}
    assert got == expected, f"{name}: per-layer op counts changed:\n{json.dumps(layer, indent=1)}"
    expected_fused = {k: v for k, v in expected.items() if k.startswith(FUSED_PREFIXES) and v}
    assert fused(layer) == expected_fused, f"{name}: fusions changed: {fused(layer)}"


@pytest.mark.parametrize("name, expected", [("serving/float32", SERVING_FLOAT32),
                                            ("train/float32", TRAIN_FLOAT32)])
def test_float32_fusions_per_layer(name, expected):
    check(name, expected)


@pytest.mark.parametrize("name, without_onednn, with_onednn", [
    ("serving/bfloat16", SERVING_BFLOAT16_NO_ONEDNN, SERVING_BFLOAT16_ONEDNN),
    ("train/bfloat16", TRAIN_BFLOAT16_NO_ONEDNN, TRAIN_BFLOAT16_ONEDNN)])
def test_bfloat16_fusions_per_layer(name, without_onednn, with_onednn):
    """Which table holds depends on the CPU (whether TensorFlow gives bf16 ops to oneDNN):
    each CPU kind checks its own; both were measured (AMD EPYC AVX2, Intel Xeon AMX)."""
    check(name, with_onednn if measured()["bf16_on_onednn"] else without_onednn)


@pytest.mark.parametrize("name", sorted(XLA_KERNELS))
def test_layer_norm_and_gelu_gradients_are_one_xla_kernel_each(name):
    assert measured()["xla"][name] == XLA_KERNELS[name]
