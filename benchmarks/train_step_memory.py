"""Peak resident memory (RSS) and step time of ALBERT-base pretraining train steps.

    python benchmarks/train_step_memory.py --seq_lengths=128,512 [--batch=8] [--steps=3] \
        [--variants=plain,recompute]

Each (length, variant) runs in its own process (peak RSS only grows), building
AlbertPretrainer from the albert_base_v2 preset and taking `--steps` LAMB steps on random
data with 20 masked positions (76 at 512, as the original's max_predictions_per_seq
scales). Variant "recompute" sets the transformer stack's `recompute_grad`
(`--recompute_grad`): each block's activations are recomputed in the backward pass.
Reports the process's peak RSS from getrusage, the RSS after building the model, and the
mean wall time and CPU time (all threads, user + system) of the steps after the first (which
traces the graph); with both variants, the recompute/plain ratios of peak RSS, wall and CPU
time, from this one run. On a shared machine the wall-time ratio moves with the other
processes' load; the CPU-time ratio (the work done) much less.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("seq_lengths", ["128", "512"], "Sequence lengths, one process each.")
flags.DEFINE_integer("batch", 8, "Batch size.")
flags.DEFINE_integer("steps", 3, "Train steps (the first traces the graph and is not timed).",
                     lower_bound=2)
flags.DEFINE_list("variants", ["plain", "recompute"], "plain and/or recompute.")

CHILD = """
import json, resource, sys, time, numpy as np, tensorflow as tf
from albert_tf import AlbertConfig
from albert_tf.models import AlbertPretrainer
from albert_tf.training import create_optimizer
seq, batch, steps, recompute = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "recompute"
masked = 20 if seq <= 128 else 76
model = AlbertPretrainer(AlbertConfig.from_preset("albert_base_v2"))
model.encoder.transformer.recompute_grad = recompute
built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
optimizer = create_optimizer("lamb", 1e-4, 100, 10)
rng = np.random.default_rng(0)
ids = rng.integers(5, 30000, (batch, seq)).astype("int32")
x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
     "masked_lm_positions": rng.integers(1, seq, (batch, masked)).astype("int32")}
labels = rng.integers(5, 30000, (batch, masked)).astype("int32")
sop = rng.integers(0, 2, (batch,)).astype("int32")
@tf.function
def step():
    with tf.GradientTape() as tape:
        out = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, out["mlm_logits"], from_logits=True)) \\
            + tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(sop, out["sop_logits"], from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
times, cpu_times = [], []
for _ in range(steps):
    start, cpu_start = time.perf_counter(), time.process_time()
    float(step())
    times.append(time.perf_counter() - start)
    cpu_times.append(time.process_time() - cpu_start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seq": seq, "built_mib": built / 1024, "peak_mib": peak / 1024,
                  "step_s": sum(times[1:]) / len(times[1:]),
                  "cpu_s": sum(cpu_times[1:]) / len(cpu_times[1:])}))
"""


def measure(seq: str, variant: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, seq, str(FLAGS.batch), str(FLAGS.steps), variant],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    del argv
    for variant in FLAGS.variants:
        if variant not in ("plain", "recompute"):
            raise app.UsageError(f"--variants: unknown variant {variant!r} (plain, recompute)")
    with open("/proc/loadavg") as f:
        print(f"load average at start: {' '.join(f.read().split()[:3])}")
    print(f"| seq | batch | variant | RSS after build (MiB) | peak RSS over {FLAGS.steps} train "
          "steps (MiB) | step wall time (s) | step CPU time (s) |")
    print("|---|---|---|---|---|---|---|")
    for seq in FLAGS.seq_lengths:
        rows = {}
        for variant in FLAGS.variants:
            row = rows[variant] = measure(seq, variant)
            print(f"| {row['seq']} | {FLAGS.batch} | {variant} | {row['built_mib']:,.0f} | "
                  f"{row['peak_mib']:,.0f} | {row['step_s']:.2f} | {row['cpu_s']:.2f} |",
                  flush=True)
        if len(rows) == 2:
            plain, recompute = rows["plain"], rows["recompute"]
            print(f"| {seq} | | recompute / plain | | "
                  f"{recompute['peak_mib'] / plain['peak_mib']:.2f} "
                  f"({1 - recompute['peak_mib'] / plain['peak_mib']:.0%} lower) | "
                  f"{recompute['step_s'] / plain['step_s']:.2f} | "
                  f"{recompute['cpu_s'] / plain['cpu_s']:.2f} |", flush=True)
    with open("/proc/loadavg") as f:
        print(f"load average at end: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    app.run(main)
