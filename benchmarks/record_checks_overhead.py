"""Cost of the pre-training input's value checks (`pretraining_dataset(id_limits=...)`).

    python benchmarks/record_checks_overhead.py [--batches=300] [--repeats=5]

Writes synthetic static records (4 files, max_seq_length 128, 20 predictions) once, then
times the training pipeline (interleave, shuffle, parse, batch 64) with and without the
checks, alternating the two in each repeat so load changes hit both alike. Reports the
process CPU time per example (all tf.data threads; much less sensitive to other load on the
machine than wall time) and wall-clock examples/s, and the ratios checked / plain.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import albert_tf.runtime.quiet_startup  # noqa: F401  (before TensorFlow)
from albert_tf.data import pretraining_dataset
from albert_tf.data.value_checks import IdLimits
from tests.data import record_files

SEQ, PRED, BATCH = 128, 20, 64


def measure(files: list[str], batches: int, limits: IdLimits | None) -> tuple[float, float]:
    """(CPU µs per example, wall examples/s) over `batches` batches after a warm-up."""
    dataset = pretraining_dataset(files, BATCH, SEQ, PRED, seed=0, id_limits=limits)
    iterator = iter(dataset)
    for _ in range(20):  # warm-up: graph tracing, buffers
        next(iterator)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(batches):
        next(iterator)
    examples = batches * BATCH
    return ((time.process_time() - cpu) * 1e6 / examples,
            examples / (time.perf_counter() - wall))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    limits = IdLimits(vocab_size=30000, type_vocab_size=2, source="benchmark")
    with tempfile.TemporaryDirectory() as directory:
        files = [record_files.write(os.path.join(directory, f"{i}.tfrecord"),
                                    record_files.rows(2000, SEQ, PRED, vocab=30000, seed=i))
                 for i in range(4)]
        plain, checked = [], []
        for _ in range(args.repeats):
            plain.append(measure(files, args.batches, None))
            checked.append(measure(files, args.batches, limits))
            print(f"plain {plain[-1][0]:.1f} CPU µs/example ({plain[-1][1]:,.0f}/s), checked "
                  f"{checked[-1][0]:.1f} CPU µs/example ({checked[-1][1]:,.0f}/s)", flush=True)
    cpu_ratio = statistics.median(c[0] for c in checked) / statistics.median(p[0] for p in plain)
    wall_ratio = statistics.median(c[1] for c in checked) / statistics.median(p[1] for p in plain)
    print(f"median CPU µs/example: plain {statistics.median(p[0] for p in plain):.1f}, checked "
          f"{statistics.median(c[0] for c in checked):.1f} → CPU cost ratio checked/plain "
          f"{cpu_ratio:.3f}; wall examples/s ratio checked/plain {wall_ratio:.3f}")


if __name__ == "__main__":
    main()
