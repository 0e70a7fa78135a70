"""GELU and LayerNorm forward + backward: TensorFlow's op-by-op gradient vs the one-kernel
gradient of albert_tf.layers.fused_gradients, at ALBERT-base shapes (issue 30).

Each case runs `loss = Σ f(x) · dy` and its gradient in a tf.function, interleaved rounds,
best ms per call; it also prints the largest difference of the two gradients relative to the
largest gradient. oneDNN follows the scripts' choice (execution_rules) unless
TF_ENABLE_ONEDNN_OPTS is set.

    .venv/bin/python benchmarks/fused_gradients.py [--tokens 1024] [--hidden 768] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.runtime import execution_rules  # before TensorFlow: it sets oneDNN

execution_rules.choose_onednn()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.layers import gelu_tanh  # noqa: E402
from albert_tf.layers.fused_gradients import (  # noqa: E402
    gelu_tanh_fused_gradient, layer_norm_fused_gradient)

EPSILON = 1e-12


def gradient_step(fn, watched: int):
    """A tf.function of (*inputs, dy) → gradients of Σ fn(*inputs) · dy w.r.t. the first
    `watched` inputs."""

    @tf.function
    def step(*args):
        *inputs, dy = args
        with tf.GradientTape() as tape:
            tape.watch(inputs[:watched])
            loss = tf.reduce_sum(fn(*inputs) * dy)
        return tape.gradient(loss, inputs[:watched])

    return step


def cases(tokens: int, hidden: int) -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    inner = tf.constant(rng.normal(0, 2, (tokens, 4 * hidden)), tf.float32)
    d_inner = tf.constant(rng.normal(0, 1, (tokens, 4 * hidden)), tf.float32)
    x = tf.constant(rng.normal(1, 3, (tokens, hidden)), tf.float32)
    gamma = tf.constant(rng.normal(1, 0.1, hidden), tf.float32)
    beta = tf.constant(rng.normal(0, 0.1, hidden), tf.float32)
    dy = tf.constant(rng.normal(0, 1, (tokens, hidden)), tf.float32)
    plain_norm = lambda x, g, b: keras.ops.layer_normalization(x, g, b, -1, EPSILON)  # noqa: E731
    fused_norm = lambda x, g, b: layer_norm_fused_gradient(x, g, b, EPSILON)  # noqa: E731
    return {
        f"GELU (tanh) [{tokens}, {4 * hidden}]": (
            gradient_step(gelu_tanh, 1), gradient_step(gelu_tanh_fused_gradient, 1),
            (inner, d_inner)),
        f"LayerNorm [{tokens}, {hidden}]": (
            gradient_step(plain_norm, 3), gradient_step(fused_norm, 3), (x, gamma, beta, dy)),
    }


def ms_per_call(step, args, calls: int) -> float:
    """Mean ms of `calls` back-to-back calls (the last one's result read back)."""
    start = time.perf_counter()
    for _ in range(calls):
        out = step(*args)
    out[0].numpy()
    return (time.perf_counter() - start) / calls * 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=1024, help="batch × sequence length")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="calls per timed round")
    args = parser.parse_args(argv)
    print(f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset)')}, "
          f"best of {args.rounds} rounds × {args.calls} calls")
    print("| case | TensorFlow's gradient ms | fused gradient ms | speed-up | max rel diff |")
    print("|---|---|---|---|---|")
    for name, (plain, fused, inputs) in cases(args.tokens, args.hidden).items():
        want = [g.numpy() for g in plain(*inputs)]
        got = [g.numpy() for g in fused(*inputs)]
        diff = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(got, want))
        times = {"plain": float("inf"), "fused": float("inf")}
        for _ in range(args.rounds):  # interleaved: both see the same machine load
            times["plain"] = min(times["plain"], ms_per_call(plain, inputs, args.calls))
            times["fused"] = min(times["fused"], ms_per_call(fused, inputs, args.calls))
        print(f"| {name} | {times['plain']:.2f} | {times['fused']:.2f} | "
              f"{times['plain'] / times['fused']:.2f}× | {diff:.1e} |")


if __name__ == "__main__":
    main()
