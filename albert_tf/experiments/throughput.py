"""Table 2 on this machine: training-step throughput of ALBERT-large against BERT-large.

Both shapes (L=24, H=1024, 16 heads, I=4096, V=30000; ALBERT: E=128 and every layer
shared; BERT: E=H and nothing shared) run the training loop's per-step work — forward, the
pretraining loss, gradients made dense as the loop makes them, LAMB with global-norm
clipping 1.0 — on one constant batch, compiled with tf.function. The models alternate in
rounds (the order flips every round), so both see the same machine load; the speedup of a
round is BERT's time over ALBERT's for the same number of steps.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from albert_tf.experiments.budget import ThroughputShapes


def _batch(shapes: ThroughputShapes, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    b, s, p = shapes.batch_size, shapes.seq_length, shapes.max_predictions_per_seq
    features = {
        "input_word_ids": rng.integers(5, shapes.vocab_size, (b, s)).astype("int32"),
        "input_mask": np.ones((b, s), "int32"),
        "input_type_ids": (np.arange(s)[None, :] >= s // 2).astype("int32").repeat(b, 0),
        "masked_lm_positions": np.stack([rng.choice(s, p, replace=False) for _ in range(b)]).astype("int32"),
    }
    labels = {"masked_lm_ids": rng.integers(5, shapes.vocab_size, (b, p)).astype("int32"),
              "masked_lm_weights": np.ones((b, p), "float32"),
              "next_sentence_labels": rng.integers(0, 2, (b, 1)).astype("int32")}
    return features, labels


def _train_step(config) -> tuple[Callable[[dict, dict], Any], int]:
    """A compiled training step of a fresh pretrainer; also its parameter count."""
    import tensorflow as tf

    from albert_tf.models import AlbertPretrainer
    from albert_tf.training import create_optimizer
    from albert_tf.pretraining.modeling import PretrainingObjective

    model = AlbertPretrainer(config)
    objective = PretrainingObjective()
    optimizer = create_optimizer("lamb", 1e-4, 10_000, 0)
    optimizer.global_clipnorm = 1.0  # what LoopConfig.clip_norm sets
    optimizer.build(model.trainable_variables)

    @tf.function
    def step(features, labels):
        with tf.GradientTape() as tape:
            outputs = model(features, training=True)
            loss = objective.loss(labels, outputs, objective.normalizers(labels))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.convert_to_tensor(g) for g in grads]
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return step, int(model.encoder.count_params())


def measure(shapes: ThroughputShapes, log: Callable[[str], None]) -> dict[str, Any]:
    """Seconds per step of both shapes, per round (wall clock and process CPU time), and the
    speedups (BERT time / ALBERT time) per round."""
    import tensorflow as tf

    features, labels = _batch(shapes)
    features = {k: tf.constant(v) for k, v in features.items()}
    labels = {k: tf.constant(v) for k, v in labels.items()}
    steps, parameters = {}, {}
    for name, config in shapes.configs().items():
        steps[name], parameters[name] = _train_step(config)
        start = time.perf_counter()
        for _ in range(shapes.warmup_steps):
            float(steps[name](features, labels))
        log(f"Table 2: {name} built, {parameters[name] / 1e6:.1f}M parameters, "
            f"{shapes.warmup_steps} warm-up step(s) in {time.perf_counter() - start:.1f}s")
    names = list(steps)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for round_index in range(shapes.rounds):
        for name in (names if round_index % 2 == 0 else names[::-1]):
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(shapes.steps_per_round):
                float(steps[name](features, labels))
            wall[name].append((time.perf_counter() - wall_start) / shapes.steps_per_round)
            cpu[name].append((time.process_time() - cpu_start) / shapes.steps_per_round)
        log(f"Table 2: round {round_index + 1}/{shapes.rounds}: " + ", ".join(
            f"{n} {wall[n][-1]:.2f}s/step" for n in names))
    albert, bert = "ALBERT-large", "BERT-large"
    wall_speedups = [b / a for a, b in zip(wall[albert], wall[bert])]
    cpu_speedups = [b / a for a, b in zip(cpu[albert], cpu[bert])]
    return {"parameters": parameters, "wall_seconds_per_step": wall,
            "cpu_seconds_per_step": cpu, "wall_speedups": wall_speedups,
            "cpu_speedups": cpu_speedups, "median_wall_speedup": statistics.median(wall_speedups),
            "median_cpu_speedup": statistics.median(cpu_speedups),
            "examples_per_step": shapes.batch_size, "seq_length": shapes.seq_length}
