"""The ALBERT train step's matmul shapes: TensorFlow's MatMul against torch.mm (issue 30).

For each product of one encoder layer's forward and backward pass (tokens × hidden, hidden ×
intermediate, with the transposes autodiff uses), float32, GFLOP/s of TensorFlow's MatMul in a
tf.function (oneDNN's sgemm where oneDNN is on: ONEDNN_VERBOSE shows `gemm_api`) and of
torch.mm (MKL), median of interleaved rounds. It shows whether a train step is bound by
TensorFlow's matmul kernel rather than by the graph around it.

    .venv/bin/python benchmarks/matmul_shapes.py [--tokens 1024] [--hidden 768] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.runtime import execution_rules  # before TensorFlow: it sets oneDNN

execution_rules.choose_onednn()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def shapes(tokens: int, hidden: int) -> list[tuple[str, int, int, int, bool, bool]]:
    """(role, M, K, N, transpose_a, transpose_b) of one layer's train-step products."""
    inner = 4 * hidden
    return [
        ("Q/K/V/O forward", tokens, hidden, hidden, False, False),
        ("their input gradients", tokens, hidden, hidden, False, True),
        ("their weight gradients", hidden, tokens, hidden, True, False),
        ("FFN in, forward", tokens, hidden, inner, False, False),
        ("FFN in, input gradient", tokens, inner, hidden, False, True),
        ("FFN in, weight gradient", hidden, tokens, inner, True, False),
        ("FFN out, forward", tokens, inner, hidden, False, False),
        ("FFN out, input gradient", tokens, hidden, inner, False, True),
        ("FFN out, weight gradient", inner, tokens, hidden, True, False),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=1024, help="batch × sequence length")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10, help="calls per timed round")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    try:
        import torch
        torch.set_num_threads(cores)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    cases = []
    for role, m, k, n, ta, tb in shapes(args.tokens, args.hidden):
        a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
        tf_a, tf_b = tf.constant(a), tf.constant(b)
        tf_step = tf.function(lambda x, y, ta=ta, tb=tb: tf.matmul(
            x, y, transpose_a=ta, transpose_b=tb))
        steps = {"tf": lambda f=tf_step, x=tf_a, y=tf_b: f(x, y).numpy()}
        if torch is not None:
            t_a, t_b = torch.from_numpy(a), torch.from_numpy(b)
            steps["torch"] = lambda x=t_a, y=t_b, ta=ta, tb=tb: torch.mm(
                x.t() if ta else x, y.t() if tb else y)
        for step in steps.values():
            step()
        cases.append((role, m, k, n, ta, tb, steps))
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for role, m, k, n, ta, tb, steps in cases:
            for who, step in steps.items():
                start = time.perf_counter()
                for _ in range(args.calls):
                    step()
                seconds = (time.perf_counter() - start) / args.calls
                rates.setdefault((role, who), []).append(2 * m * k * n / seconds / 1e9)
    print(f"{cores} threads, TF_ENABLE_ONEDNN_OPTS="
          f"{os.environ.get(execution_rules.ONEDNN_ENV, '(unset)')}, float32, GFLOP/s "
          f"(median of {args.rounds} interleaved rounds × {args.calls} calls)")
    print("| M×K×N (transposes) | role | TF MatMul | torch.mm | torch / TF |")
    print("|---|---|---|---|---|")
    for role, m, k, n, ta, tb, steps in cases:
        note = ", A transposed" if ta else ", B transposed" if tb else ""
        ours = statistics.median(rates[(role, "tf")])
        peer = statistics.median(rates[(role, "torch")]) if "torch" in steps else float("nan")
        print(f"| {m}×{k}×{n}{note} | {role} | {ours:.0f} | {peer:.0f} | {peer / ours:.2f}× |")


if __name__ == "__main__":
    main()
