"""Subprocess body of the bucketed-training test: 2 logical CPUs and an XLA dump directory.

    XLA_FLAGS=--xla_dump_to=DUMP python -m tests.finetuning.scripts.bucketed_training WORK_DIR

A tiny one-layer classifier (no dropout; fewer ops to trace and compile) trains 4 steps on length-bucketed feature records through the
shared path (`finetuning.records.train_dataset_fn` → `Trainer`) three times from the same
weights: on one device, on one device with --jit_compile, and mirrored over 2 replicas.
Prints one JSON line with each run's trace counts and final weights' largest difference from
the one-device run, and the padded lengths of the batches the runs consumed.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

from albert_tf.finetuning import records  # noqa: E402
from albert_tf.finetuning.bucketing import LengthBuckets  # noqa: E402
from albert_tf.finetuning.objective import classification_objective  # noqa: E402
from albert_tf.models import AlbertClassifier  # noqa: E402
from albert_tf.training import LoopConfig, Trainer, create_optimizer, get_strategy  # noqa: E402
from tests.conftest import tiny_config  # noqa: E402

MAX_LEN, STEPS, BATCH = 48, 4, 8


def write_records(path: str) -> None:
    """64 examples of 1–48 real tokens; the label is whether the first id is even."""
    rng = np.random.default_rng(5)
    count = 64
    ids = np.zeros((count, MAX_LEN), np.int64)
    mask = np.zeros((count, MAX_LEN), np.int64)
    for i, length in enumerate(rng.integers(1, MAX_LEN + 1, count)):
        ids[i, :length] = rng.integers(5, 100, length)
        mask[i, :length] = 1
    records.write_feature_records(path, {
        "input_ids": ("int64", ids), "input_mask": ("int64", mask),
        "segment_ids": ("int64", np.zeros_like(ids)),
        "label_ids": ("int64", (ids[:, 0] % 2).reshape(count, 1)),
        "is_real_example": ("int64", np.ones((count, 1), np.int64))})


def train(strategy, output_dir: str, dataset_fn, initial, jit_compile: bool = False):
    keras.utils.set_random_seed(0)
    config = LoopConfig(output_dir, num_train_steps=STEPS, train_batch_size=BATCH,
                        iterations_per_loop=2, save_checkpoints_steps=2, log_steps=2,
                        jit_compile=jit_compile)
    trainer = Trainer(lambda: AlbertClassifier(tiny_config(num_hidden_layers=1), 2, dropout_rate=0.0),
                      classification_objective(), config, strategy=strategy,
                      optimizer_fn=lambda: create_optimizer("adamw", 1e-3, STEPS, 0),
                      init_fn=(lambda model: model.set_weights(initial)) if initial else None)
    weights = trainer.model.get_weights()
    trainer.train(dataset_fn)
    traces = {"train_loop": trainer._train_loop_fn.experimental_get_tracing_count()}
    if jit_compile:
        traces["forward_backward"] = trainer._forward_backward_fn.experimental_get_tracing_count()
    return weights, trainer.model.get_weights(), traces


def main(work_dir: str) -> None:
    path = os.path.join(work_dir, "train.tf_record")
    write_records(path)
    dataset_fn = records.train_dataset_fn(path, BATCH, records.feature_decoder((MAX_LEN,)),
                                          seed=1, buckets=LengthBuckets(MAX_LEN))
    widths = [int(features["input_word_ids"].shape[-1]) for features, _ in
              dataset_fn(tf.distribute.InputContext()).take(STEPS)]
    one = get_strategy("one_device")
    initial, reference, traces = train(one, os.path.join(work_dir, "one"), dataset_fn, None)
    runs = {"one_device": {"traces": traces, "weights_max_diff": 0.0}}
    for name, strategy, jit in (("one_device_xla", one, True),
                                ("mirrored", get_strategy("mirrored"), False)):
        _, final, traces = train(strategy, os.path.join(work_dir, name), dataset_fn, initial, jit)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(final, reference))
        runs[name] = {"traces": traces, "weights_max_diff": diff,
                      "replicas": strategy.num_replicas_in_sync}
    print(json.dumps({"widths": widths, "runs": runs,
                      "moved": max(float(np.max(np.abs(a - b)))
                                   for a, b in zip(reference, initial))}))


if __name__ == "__main__":
    main(sys.argv[1])
