"""Length buckets: the lengths, each example in the smallest bucket that holds it and cut
consistently, every eval example once and back in order, replicas of a step on one length,
buckets in data order (no short-first bias), exact resume of the input position, one trace of
the train loop for every bucket (also under XLA), the TPU default."""

from __future__ import annotations

import json
import logging
import os
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.finetuning.bucketing import (ORDER_KEY, LengthBuckets, real_length,
                                            restore_order)
from albert_tf.finetuning.inference import Predictor
from albert_tf.finetuning.run import FineTuningError, FineTuningRun
from tests.training import processes

MAX_LEN = 64


def examples(lengths, options: int | None = None, seed: int = 0):
    """(features, passthrough) of rows with `lengths` real tokens (ids 1..99, then 0s);
    with `options`, [C, S] rows whose longest option has the length."""
    rng = np.random.default_rng(seed)
    shape = (len(lengths), options, MAX_LEN) if options else (len(lengths), MAX_LEN)
    ids = np.zeros(shape, np.int32)
    mask = np.zeros(shape, np.int32)
    for i, length in enumerate(lengths):
        row_lengths = [length] if not options else [length] + list(
            rng.integers(0, length + 1, options - 1))
        for c, n in enumerate(rng.permutation(row_lengths)):
            target = (i, c) if options else (i,)
            ids[target][:n] = rng.integers(1, 100, n)
            mask[target][:n] = 1
    features = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": mask.copy(),
                "scalar": np.arange(len(lengths), dtype=np.int32)}
    return features, {"label_ids": np.arange(len(lengths), dtype=np.int64)}


def as_dataset(features, passthrough):
    return tf.data.Dataset.from_tensor_slices((features, passthrough))


def test_lengths_are_multiples_of_the_step_up_to_max_seq_length():
    assert LengthBuckets(128).lengths == (16, 32, 48, 64, 80, 96, 112, 128)
    assert LengthBuckets(40).lengths == (16, 32, 40)
    assert LengthBuckets(128, step=32, min_length=40).lengths == (64, 96, 128)
    assert LengthBuckets(10).lengths == (10,)
    with pytest.raises(ValueError, match="min_length 80 exceeds max_seq_length 64"):
        LengthBuckets(64, min_length=80)


def test_real_length_is_one_past_the_last_real_token():
    assert int(real_length({"input_mask": tf.constant([1, 1, 1, 0, 0])})) == 3
    assert int(real_length({"input_mask": tf.constant([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]])})) == 4
    assert int(real_length({"input_mask": tf.zeros([6], tf.int32)})) == 0


@pytest.mark.parametrize("options", [None, 4], ids=["glue", "race"])
def test_eval_batches_keep_every_example_cut_to_its_bucket(options):
    lengths = [3, 64, 17, 16, 33, 1, 48, 49, 20, 5, 63, 31, 32]
    features, passthrough = examples(lengths, options)
    buckets = LengthBuckets(MAX_LEN)
    seen = []
    for batch_features, batch_passthrough in buckets.eval_batches(
            as_dataset(features, passthrough), batch_size=3):
        order = batch_passthrough[ORDER_KEY].numpy()
        seen += list(order)
        width = batch_features["input_word_ids"].shape[-1]
        assert batch_features["input_mask"].shape[-1] == width
        # Every row is in the smallest bucket ≥ its length: same bucket for the whole batch.
        for row in order:
            assert width == min(b for b in buckets.lengths if b >= max(lengths[row], 1))
        for name in ("input_word_ids", "input_mask", "input_type_ids"):
            np.testing.assert_array_equal(batch_features[name], features[name][order][..., :width])
            assert not features[name][order][..., width:].any()  # only padding was cut
        np.testing.assert_array_equal(batch_features["scalar"], order)  # not a sequence: kept
        np.testing.assert_array_equal(batch_passthrough["label_ids"], order)
    assert sorted(seen) == list(range(len(lengths)))  # partial windows flushed at the end


def test_predictor_restores_the_file_order_with_one_trace(caplog):
    ids = keras.Input((None,), dtype="int32", name="input_word_ids")
    mask = keras.Input((None,), dtype="int32", name="input_mask")
    values = keras.ops.cast(ids * mask, "float32")
    model = keras.Model({"input_word_ids": ids, "input_mask": mask},
                        {"total": keras.ops.sum(values, axis=-1)})
    lengths = [60, 2, 18, 40, 7, 64, 16, 33, 9, 50, 22]
    features, passthrough = examples(lengths)
    predictor = Predictor(model, outputs=("total",), model_inputs=lambda f: {
        "input_word_ids": f["input_word_ids"], "input_mask": f["input_mask"]})
    with caplog.at_level(logging.INFO, logger="absl"):
        bucketed = predictor.run(LengthBuckets(MAX_LEN).eval_batches(
            as_dataset(features, passthrough), batch_size=2), num_examples=len(lengths))
        padded = predictor.run(as_dataset(features, passthrough).batch(2))
    assert ORDER_KEY not in bucketed
    np.testing.assert_array_equal(bucketed["label_ids"], np.arange(len(lengths)))
    np.testing.assert_allclose(bucketed["total"], features["input_word_ids"].sum(axis=1))
    np.testing.assert_allclose(bucketed["total"], padded["total"])
    assert predictor.num_traces == 1
    # 16: lengths 2, 7, 16, 9; 32: 18, 22; 48: 40, 33; 64: 60, 64, 50 (batches of 2)
    assert "batches per padded length: 16: 2, 32: 1, 48: 1, 64: 2" in caplog.text


def test_restore_order_sorts_every_array_by_the_order_key():
    results = {ORDER_KEY: np.array([2, 0, 1]), "x": np.array([20, 0, 10]),
               "y": np.array([[2, 2], [0, 0], [1, 1]])}
    restored = restore_order(results)
    assert sorted(restored) == ["x", "y"]
    np.testing.assert_array_equal(restored["x"], [0, 10, 20])
    np.testing.assert_array_equal(restored["y"], [[0, 0], [1, 1], [2, 2]])


def train_stream(lengths, replicas=1, per_replica=2, seed=3):
    features, passthrough = examples(lengths)
    dataset = as_dataset(features, passthrough).repeat().shuffle(100, seed=seed)
    return LengthBuckets(MAX_LEN).train_batches(dataset, per_replica, replicas)


def test_train_batches_share_a_length_per_step_and_come_in_data_order():
    rng = np.random.default_rng(1)
    lengths = list(rng.integers(1, MAX_LEN + 1, 200))
    buckets = LengthBuckets(MAX_LEN)
    widths, counts = [], {}
    for features, labels in train_stream(lengths, replicas=2).take(400):
        assert features["input_word_ids"].shape[0] == 2  # static per-replica batch
        width = features["input_word_ids"].shape[-1]
        widths.append(width)
        for row in labels["label_ids"].numpy():
            assert width == min(b for b in buckets.lengths if b >= lengths[row])
            counts[width] = counts.get(width, 0) + 1
    # The 2 replicas of each step (consecutive batches) get the same length.
    assert all(widths[i] == widths[i + 1] for i in range(0, len(widths), 2))
    # Buckets interleave (no sorted order) and are drawn as often as the data holds them.
    steps = widths[::2]
    assert len(set(steps[:12])) >= 3
    assert any(a > b for a, b in zip(steps, steps[1:])) and any(
        a < b for a, b in zip(steps, steps[1:]))
    expected = {b: sum(min(x for x in buckets.lengths if x >= n) == b for n in lengths) / 200
                for b in buckets.lengths}
    for width, count in counts.items():
        assert count / 800 == pytest.approx(expected[width], abs=0.06), width


def test_iterator_checkpoint_resumes_the_bucketed_stream_exactly(tmp_path):
    lengths = list(np.random.default_rng(2).integers(1, MAX_LEN + 1, 50))
    iterator = iter(train_stream(lengths))
    for _ in range(7):
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.write(str(tmp_path / "input"))
    expected = [next(iterator)[1]["label_ids"].numpy() for _ in range(10)]
    resumed = iter(train_stream(lengths))
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    got = [next(resumed)[1]["label_ids"].numpy() for _ in range(10)]
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)


def _run(bucket_by_length, tpu: bool):
    import albert_tf.finetuning.run as run_module

    fake = types.SimpleNamespace(opts=types.SimpleNamespace(bucket_by_length=bucket_by_length),
                                 strategy=tf.distribute.get_strategy())
    original = run_module.uses_static_shapes
    run_module.uses_static_shapes = lambda strategy: tpu
    try:
        return FineTuningRun.length_buckets(fake, 128, min_length=5)
    finally:
        run_module.uses_static_shapes = original


def test_default_is_on_except_on_tpu():
    assert _run(None, tpu=False).lengths[0] == 16
    assert _run(True, tpu=False) is not None
    assert _run(False, tpu=False) is None
    assert _run(None, tpu=True) is None
    with pytest.raises(FineTuningError, match="TPU .*--nobucket_by_length"):
        _run(True, tpu=True)


def test_training_traces_once_compiles_once_per_length_and_mirrors(tmp_path):
    """4 steps over 3 bucket lengths: one trace of the loop; under XLA one compilation per
    length seen (counted in XLA's dump); 2 replicas end with the one-device weights."""
    dump = tmp_path / "xla_dump"
    result = processes.run(["-m", "tests.finetuning.scripts.bucketed_training", str(tmp_path)],
                           timeout=600, XLA_FLAGS=f"--xla_dump_to={dump}")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    values = json.loads(result.stdout.strip().splitlines()[-1])
    widths, runs = values["widths"], values["runs"]
    assert len(set(widths)) >= 3  # the steps really had different lengths
    compiled = [name for name in os.listdir(dump) if "forward_backward" in name
                and name.endswith(".before_optimizations.txt")]
    assert len(compiled) == len(set(widths))
    assert runs["one_device_xla"]["traces"] == {"train_loop": 1, "forward_backward": 1}
    assert runs["one_device"]["traces"] == runs["mirrored"]["traces"] == {"train_loop": 1}
    assert runs["mirrored"]["replicas"] == 2
    assert values["moved"] > 1e-3  # training changed the weights ...
    for name in ("one_device_xla", "mirrored"):  # ... and every run the same way
        assert runs[name]["weights_max_diff"] < 1e-5, name
