"""Training-loop overhead: examples/s of `Trainer` vs a bare model train step (issue [3/8]).

ALBERT-base shapes (AlbertConfig.from_preset("albert_base_v2"), batch 8 × 128, 20 masked
positions), one device, float32, LAMB with the original schedule in both:

  * bare: a tf.function doing forward, MLM+SOP loss, gradient and optimizer.apply on
    constant tensors — the step of benchmarks/model_speed.py with our LAMB;
  * loop: the Trainer's compiled `iterations_per_loop` call (tf.data input, strategy.run,
    cross-replica sum, global-norm clipping, metrics, non-finite check, step counter).

Both are compiled and warmed, then timed in alternating rounds so load from other processes
hits both alike; reported are the median and best per-step wall times, and process CPU
time per step (all threads: the work done, which other jobs on a shared machine disturb far
less than wall time). Finally one end-to-end
`Trainer.train()` run (host loop, logging, checkpoint at the end) reports its own logged
examples/s. Overhead target: loop ≤ 10% slower than bare.

Usage:
    TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/training_loop_overhead.py
    .venv/bin/python benchmarks/training_loop_overhead.py --steps 5 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from albert_tf import AlbertConfig
from albert_tf.models import AlbertPretrainer
from albert_tf.training import Callback, LoopConfig, Trainer, create_optimizer
from albert_tf.training import distribute
from albert_tf.pretraining.modeling import PretrainingObjective, masked_lm_loss


def make_batch(config: AlbertConfig, batch: int, seq: int, masked: int):
    rng = np.random.default_rng(0)
    features = {
        "input_word_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "input_type_ids": np.repeat([[0] * (seq // 2) + [1] * (seq - seq // 2)], batch, 0).astype("int32"),
        "masked_lm_positions": np.stack([np.sort(rng.choice(np.arange(1, seq), masked, replace=False))
                                         for _ in range(batch)]).astype("int32"),
    }
    labels = {"masked_lm_ids": rng.integers(5, config.vocab_size, (batch, masked)).astype("int32"),
              "masked_lm_weights": np.ones((batch, masked), "float32"),
              "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32")}
    return features, labels


def optimizer_fn(steps: int):
    return lambda: create_optimizer("lamb", 0.00176, 125000, 3125)


def bare_step_fn(config: AlbertConfig, features, labels, jit: bool):
    model = AlbertPretrainer(config)
    optimizer = optimizer_fn(0)()
    optimizer.build(model.trainable_variables)
    x = {k: tf.constant(v) for k, v in features.items()}
    y = {k: tf.constant(v) for k, v in labels.items()}

    @tf.function(jit_compile=jit)
    def step():
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            loss = masked_lm_loss(out["mlm_logits"], y["masked_lm_ids"], y["masked_lm_weights"])
            loss += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.reshape(y["next_sentence_labels"], [-1]), out["sop_logits"]))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return lambda n: [float(step()) for _ in range(n)]


class Rate(Callback):
    def __init__(self):
        self.logs = []

    def on_log(self, step, logs):
        self.logs.append((step, logs["examples_per_second"]))


def loop_trainer(config: AlbertConfig, features, labels, output_dir: str, steps: int, jit: bool,
                 iterations: int, callbacks=()):
    batch = features["input_word_ids"].shape[0]

    def dataset_fn(context):
        return tf.data.Dataset.from_tensors((features, labels)).repeat()

    trainer = Trainer(lambda: AlbertPretrainer(config), PretrainingObjective(),
                      LoopConfig(output_dir, num_train_steps=steps, train_batch_size=batch,
                                 iterations_per_loop=iterations, save_checkpoints_steps=steps,
                                 log_steps=iterations, jit_compile=jit),
                      optimizer_fn=optimizer_fn(steps), callbacks=callbacks)
    return trainer, dataset_fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="albert_base_v2")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--masked", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--jit", action="store_true", help="XLA for both")
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_preset(args.preset)
    features, labels = make_batch(config, args.batch, args.seq, args.masked)
    bare = bare_step_fn(config, features, labels, args.jit)

    with tempfile.TemporaryDirectory() as tmp:
        trainer, dataset_fn = loop_trainer(config, features, labels, tmp, 10**9, args.jit, args.steps)
        iterator = iter(dataset_fn(distribute.input_context(trainer.strategy)))
        loop_fn = trainer._make_train_loop()  # the compiled call Trainer.train() makes

        def loop(n):
            loop_fn(iterator, tf.constant(n, tf.int64))[0].numpy()

        print(f"{args.preset}: batch {args.batch} × {args.seq}, {args.masked} masked, "
              f"{'XLA' if args.jit else 'graph'}; warming up…", flush=True)
        bare(2)
        loop(2)
        wall = {"bare": [], "loop": []}
        cpu = {"bare": [], "loop": []}
        for r in range(args.rounds):
            order = [("bare", bare), ("loop", loop)][:: 1 if r % 2 == 0 else -1]
            for name, fn in order:
                start, start_cpu = time.perf_counter(), time.process_time()
                fn(args.steps)
                wall[name].append((time.perf_counter() - start) / args.steps)
                cpu[name].append((time.process_time() - start_cpu) / args.steps)
        for label, times in (("wall", wall), ("CPU", cpu)):
            for name, values in times.items():
                print(f"  {label:4s} {name:5s} median {statistics.median(values) * 1000:8.1f} ms/step "
                      f"({args.batch / statistics.median(values):6.2f} ex/s), best "
                      f"{min(values) * 1000:8.1f} ms/step ({args.batch / min(values):6.2f} ex/s)")
            median = statistics.median(times["loop"]) / statistics.median(times["bare"]) - 1
            best = min(times["loop"]) / min(times["bare"]) - 1
            print(f"  {label:4s} loop overhead: {median:+.1%} (medians), {best:+.1%} (best)")

    with tempfile.TemporaryDirectory() as tmp:
        rate = Rate()
        steps = 2 * args.steps
        trainer, dataset_fn = loop_trainer(config, features, labels, tmp, steps, args.jit,
                                           args.steps, callbacks=[rate])
        start = time.perf_counter()
        trainer.train(dataset_fn)
        wall = time.perf_counter() - start
        print(f"  Trainer.train() {steps} steps: logged examples/s per window "
              f"{[round(r, 2) for _, r in rate.logs]} (first window includes tracing); "
              f"wall {wall:.1f}s incl. build, trace and final checkpoint")


if __name__ == "__main__":
    main()
