"""Which oneDNN kernels an encoder export's graphs get, and where one call's time goes.

For each TF_ENABLE_ONEDNN_OPTS value (0: TensorFlow's Eigen kernels, which still call oneDNN's
sgemm; 1: TensorFlow's oneDNN ops, the default on CPUs with AVX-512/AMX), each graph of an
export directory — the TF-Hub `serving_default` (weights read from variables, every layer's
outputs) and the frozen `serving/` graph — and each batch, a child process runs the graph twice
to warm up, then once with ONEDNN_VERBOSE=1; its verbose lines are summed per primitive,
implementation and weight layout. ONEDNN_VERBOSE works on any x86 CPU; which kernels appear
depends on the CPU (AMX `brg_matmul:…_amx` only where AMX exists).

Usage:
    .venv/bin/python benchmarks/onednn_kernels.py /tmp/albert_serving_bench/<export> --batches 1,8
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time

MARK = "=== timed calls"
CALLS = 3  # timed calls; the figures are per call (oneDNN times: mean, wall: median)
WEIGHTS = re.compile(r"wei[_:](\w+)::?blocked:(\w+)")


def child(path: str, graph: str, batch: int, seq: int, threads: int) -> None:
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    directory = path if graph == "hub" else os.path.join(path, "serving")
    signature = tf.saved_model.load(directory).signatures["serving_default"]
    ids = np.random.default_rng(0).integers(5, 1000, (batch, seq)).astype(np.int32)
    feed = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(np.ones_like(ids)),
            "input_type_ids": tf.constant(np.zeros_like(ids))}
    for _ in range(2):
        signature(**feed)
    print(MARK, flush=True)
    walls = []
    for _ in range(CALLS):
        start = time.perf_counter()
        signature(**feed)["pooled_output"].numpy()
        walls.append(time.perf_counter() - start)
    print(f"=== wall {1000 * sorted(walls)[CALLS // 2]:.1f} ms", flush=True)


def summarise(output: str) -> tuple[float, list[tuple[str, int, float]], float]:
    """(oneDNN ms, [(kernel, count, ms)] largest first, wall ms) per timed call."""
    timed = output.split(MARK, 1)[-1]
    groups: dict[str, list[float]] = collections.defaultdict(list)
    wall = float("nan")
    for line in timed.splitlines():
        if line.startswith("=== wall"):
            wall = float(line.split()[2])
        fields = line.split(",")
        if not line.startswith("onednn_verbose") or len(fields) < 10 or fields[3] != "exec":
            continue
        kind, impl, layouts = fields[5], fields[6], fields[8]
        found = WEIGHTS.search(layouts)
        weights = f"weights {found.group(1)}:{found.group(2)}" if found else ""
        groups[f"{kind} {impl or '-'} {weights}".strip()].append(float(fields[-1]))
    rows = sorted(((k, len(v) // CALLS, sum(v) / CALLS) for k, v in groups.items()),
                  key=lambda r: -r[2])
    return sum(r[2] for r in rows), rows, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("export_dir")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--onednn", default="0,1", help="TF_ENABLE_ONEDNN_OPTS values")
    parser.add_argument("--child", nargs=2, metavar=("GRAPH", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.export_dir, args.child[0], int(args.child[1]), args.seq, args.threads)
        return
    for onednn in args.onednn.split(","):
        for graph in ("hub", "serving"):
            for batch in (int(b) for b in args.batches.split(",")):
                env = dict(os.environ, ONEDNN_VERBOSE="1", TF_ENABLE_ONEDNN_OPTS=onednn,
                           TF_CPP_MIN_LOG_LEVEL="2")
                result = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), args.export_dir, "--seq",
                     str(args.seq), "--threads", str(args.threads), "--child", graph, str(batch)],
                    env=env, capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    print(f"TF_ENABLE_ONEDNN_OPTS={onednn} {graph} batch {batch}: failed: "
                          f"{result.stderr.strip().splitlines()[-1:]}")
                    continue
                total, rows, wall = summarise(result.stdout)
                print(f"\nTF_ENABLE_ONEDNN_OPTS={onednn}, {graph} graph, batch {batch}: call "
                      f"{wall:.0f} ms, oneDNN {total:.0f} ms in {sum(r[1] for r in rows)} "
                      "primitives")
                for kernel, count, ms in rows[:6]:
                    print(f"  {ms:8.1f} ms  {count:5d}×  {kernel}")


if __name__ == "__main__":
    main()
