"""The training loop in one process: accumulation, mixed precision, NaN stop, outputs."""

from __future__ import annotations

import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.runtime import hardware
from albert_tf.models import AlbertPretrainer
from albert_tf.training import (Callback, LoopConfig, NonFiniteLossError, Trainer,
                                create_optimizer)
from albert_tf.models.recompute import enable_recompute
from albert_tf.pretraining.modeling import METRIC_NAMES, PretrainingObjective
from tests.conftest import tiny_config
from tests.cpuinfo_texts import AMD_AVX2, XEON_SPR
from tests.training import synthetic


class RecordLogs(Callback):
    def __init__(self):
        self.logs = []

    def on_log(self, step, logs):
        self.logs.append((step, dict(logs)))


def make_trainer(output_dir, steps=10, batch=8, lr=0.01, callbacks=(), init_fn=None,
                 strategy=None, config=None, **loop):
    """A Trainer of the tiny pretrainer (LAMB, no warmup) with `loop` LoopConfig overrides."""
    keras.utils.set_random_seed(0)
    config = config or tiny_config()
    settings = dict(num_train_steps=steps, train_batch_size=batch, iterations_per_loop=5,
                    save_checkpoints_steps=5, log_steps=5)
    settings.update(loop)
    return Trainer(lambda dtype: AlbertPretrainer(config, dtype=dtype), PretrainingObjective(),
                   LoopConfig(str(output_dir), **settings), init_fn=init_fn, callbacks=callbacks,
                   strategy=strategy,
                   optimizer_fn=lambda: create_optimizer("lamb", lr, steps, 0))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """20 float32 steps, checkpoints every 5 keeping 2, then an evaluation."""
    out = tmp_path_factory.mktemp("trained")
    record = RecordLogs()
    trainer = make_trainer(out, steps=20, keep_checkpoint_max=2, callbacks=[record])
    trainer.train(synthetic.dataset_fn(8))
    results = trainer.evaluate(synthetic.dataset_fn(8), steps=3)
    return trainer, out, record.logs, results


def test_logs_and_eval_results(trained):
    trainer, out, logs, results = trained
    assert [step for step, _ in logs] == [5, 10, 15, 20]
    for _, entry in logs:
        assert {"loss", "learning_rate", "examples_per_second", *METRIC_NAMES} <= set(entry)
    lines = open(os.path.join(out, "eval_results.txt")).read().splitlines()
    parsed = dict(line.split(" = ") for line in lines)
    assert sorted(parsed) == sorted([*METRIC_NAMES, "loss", "global_step"])
    assert parsed["global_step"] == "20"
    assert float(parsed["loss"]) == pytest.approx(results["loss"])


def test_checkpoints_and_tensorboard(trained):
    _, out, _, _ = trained
    kept = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "model.ckpt-*.index")))
    assert kept == ["model.ckpt-15.index", "model.ckpt-20.index"]
    tags = set()
    for path in glob.glob(os.path.join(out, "train", "events.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags |= {value.tag for value in event.summary.value}
    assert {"loss", "learning_rate", "masked_lm_accuracy", "examples_per_second"} <= tags
    assert glob.glob(os.path.join(out, "eval", "events.*"))


def test_gradient_accumulation_equals_one_big_batch(tmp_path):
    """4 micro-batches of 2 give the weights of one batch of 8 (≤ 1e-5), LAMB, 3 steps."""
    reference = make_trainer(tmp_path / "k1", steps=3)
    initial = reference.model.get_weights()
    reference.train(synthetic.dataset_fn(8))
    accumulated = make_trainer(tmp_path / "k4", steps=3, gradient_accumulation_steps=4,
                               init_fn=lambda model: model.set_weights(initial))
    accumulated.train(synthetic.dataset_fn(8))
    for a, b, v in zip(reference.model.get_weights(), accumulated.model.get_weights(),
                       reference.model.weights):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0, err_msg=v.path)
    assert not np.allclose(initial[0], reference.model.get_weights()[0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mixed_precision_trains(tmp_path, dtype):
    record = RecordLogs()
    trainer = make_trainer(tmp_path, steps=30, dtype=dtype, callbacks=[record], log_steps=10)
    trainer.train(synthetic.dataset_fn(8))
    losses = [logs["loss"] for _, logs in record.logs]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] - 0.3, losses
    layer = trainer.model.encoder.transformer.attention_layers[0]
    assert layer.compute_dtype == dtype and layer.layer_norm.compute_dtype == "float32"
    if dtype == "float16":
        assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored


def test_nan_loss_stops_and_last_checkpoint_resumes(tmp_path):
    """Row 59 has a NaN weight: batch 7 (rows 56–63) makes the loss NaN at step 7."""
    trainer = make_trainer(tmp_path, steps=10)
    with pytest.raises(NonFiniteLossError, match=r"at step 7\b.*model\.ckpt-5"):
        trainer.train(synthetic.dataset_fn(8, nan_weight_at=59))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    assert not glob.glob(os.path.join(tmp_path, "model.ckpt-10*"))
    with open(os.path.join(tmp_path, "model.ckpt-5.index"), "rb") as f:
        before = f.read()

    resumed = make_trainer(tmp_path, steps=10)
    resumed.train(synthetic.dataset_fn(8))
    assert int(resumed.global_step.numpy()) == 10
    assert all(np.isfinite(w).all() for w in resumed.model.get_weights())
    with open(os.path.join(tmp_path, "model.ckpt-5.index"), "rb") as f:
        assert f.read() == before


def test_recompute_grad_trains_like_the_plain_step(tmp_path):
    """LoopConfig.recompute_grad, dropout on: the plain run's weights after 3 steps."""
    config = tiny_config(hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
    runs = []
    for recompute in (False, True):
        trainer = make_trainer(tmp_path / str(recompute), steps=3, config=config,
                               recompute_grad=recompute)
        assert trainer.model.encoder.transformer.recompute_grad == recompute
        trainer.train(synthetic.dataset_fn(8))
        runs.append(trainer.model.get_weights())
    for plain, recomputed in zip(*runs):
        np.testing.assert_allclose(recomputed, plain, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="no layer of .* supports recomputation"):
        enable_recompute(keras.Sequential([keras.layers.Dense(2)]))


def test_frozen_variables_stay_put(tmp_path):
    trainer = make_trainer(tmp_path, steps=2, frozen_variable_patterns=("^embeddings/",))
    before = {v.path: v.numpy() for v in trainer.model.trainable_variables}
    trainer.train(synthetic.dataset_fn(8))
    for v in trainer.model.trainable_variables:
        changed = not np.array_equal(before[v.path], v.numpy())
        assert changed != v.path.startswith("embeddings/"), v.path


def test_bad_settings_fail_up_front(tmp_path):
    with pytest.raises(ValueError, match="divisible"):
        make_trainer(tmp_path, batch=6, gradient_accumulation_steps=4)
    with pytest.raises(ValueError, match="dtype"):
        make_trainer(tmp_path, dtype="float8")





@pytest.mark.parametrize("cpuinfo, dtype, steps, lengths, expected", [
    (AMD_AVX2, "bfloat16", 1000, 1, True),    # XLA 1.2× faster in bf16 on AVX2
    (AMD_AVX2, "bfloat16", 3, 1, False),      # too short to repay the compile
    (AMD_AVX2, "bfloat16", 40, 8, False),     # 7 more compiles for 8 bucket lengths
    (AMD_AVX2, "float32", 1000, 1, False),    # level in float32: the graph
    (XEON_SPR, "bfloat16", 1000, 1, False),    # AMX kernels are 2× XLA's
])
def test_jit_compile_not_given_follows_the_cpu_profile_table(
        tmp_path, monkeypatch, cpuinfo, dtype, steps, lengths, expected):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: cpuinfo)
    trainer = make_trainer(tmp_path, steps=steps, dtype=dtype, num_input_lengths=lengths)
    assert trainer.config.jit_compile is None
    assert trainer.jit_compile is expected


def test_jit_compile_given_is_kept_whatever_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(hardware, "_this_cpuinfo", lambda: AMD_AVX2)
    assert make_trainer(tmp_path / "a", steps=1000, dtype="bfloat16",
                        jit_compile=False).jit_compile is False
    assert make_trainer(tmp_path / "b", steps=3, jit_compile=True).jit_compile is True
