"""Peak resident memory (RSS) of ALBERT-base pretraining train steps at a given length.

    python benchmarks/train_step_memory.py --seq_lengths=128,512 [--batch=8] [--steps=3]

Each length runs in its own process (peak RSS only grows), building AlbertPretrainer from
the albert_base_v2 preset and taking `--steps` LAMB steps on random data with 20 masked
positions (76 at 512, as the original's max_predictions_per_seq scales). Reports the
process's peak RSS from getrusage, and the RSS after building the model for reference.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("seq_lengths", ["128", "512"], "Sequence lengths, one process each.")
flags.DEFINE_integer("batch", 8, "Batch size.")
flags.DEFINE_integer("steps", 3, "Train steps.")
flags.DEFINE_integer("child_seq", 0, "Internal: run one measurement at this length.")

CHILD = """
import json, resource, sys, numpy as np, tensorflow as tf
from albert_tf import AlbertConfig
from albert_tf.models import AlbertPretrainer
from albert_tf.training import create_optimizer
seq, batch, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
masked = 20 if seq <= 128 else 76
model = AlbertPretrainer(AlbertConfig.from_preset("albert_base_v2"))
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
for _ in range(steps):
    step()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seq": seq, "built_mib": built / 1024, "peak_mib": peak / 1024}))
"""


def main(argv: list[str]) -> None:
    del argv
    print(f"| seq | batch | RSS after build (MiB) | peak RSS over {FLAGS.steps} train steps (MiB) |")
    print("|---|---|---|---|")
    for seq in FLAGS.seq_lengths:
        result = subprocess.run([sys.executable, "-c", CHILD, seq, str(FLAGS.batch), str(FLAGS.steps)],
                                capture_output=True, text=True,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        if result.returncode:
            raise SystemExit(result.stderr[-3000:])
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"| {row['seq']} | {FLAGS.batch} | {row['built_mib']:,.0f} | {row['peak_mib']:,.0f} |")


if __name__ == "__main__":
    app.run(main)
