"""LAMB / AdamW updates and the LR schedule against NumPy references written from faithfulness §6.3."""

from __future__ import annotations

import contextlib
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertPretrainer
from albert_tf.training.optimizers import (LAMB, AdamW, WarmupPolynomialDecay, create_optimizer,
                                           learning_rate_at, prepare_for_loop)
from tests.conftest import random_inputs, tiny_config

BETA1, BETA2, EPS, WD = 0.9, 0.999, 1e-6, 0.01
EXCLUDE = ("LayerNorm", "layer_norm", "bias")


# ----- NumPy reference (faithfulness §6.3 table, no bias correction) -----
def reference_update(name, w, g, m, v, lr, lamb):
    """One step for one variable; returns (w, m, v)."""
    m = BETA1 * m + (1 - BETA1) * g
    v = BETA2 * v + (1 - BETA2) * g * g
    u = m / (np.sqrt(v) + EPS)
    excluded = any(re.search(p, name) for p in EXCLUDE)
    if not excluded:
        u = u + WD * w
    ratio = 1.0
    if lamb and not excluded:
        w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(u)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return w - ratio * lr * u, m, v


def make_variables(rng):
    """Variables under our paths and the original's names, excluded ones adjacent (Q16)."""
    specs = [("encoder/dense/kernel", (3, 4)), ("encoder/dense/bias", (4,)),
             ("encoder/layer_norm/gamma", (4,)), ("encoder/layer_norm/beta", (4,)),
             ("bert/embeddings/LayerNorm/beta", (4,)), ("mlm_head/output_bias", (5,)),
             ("sop_head/output_weights", (2, 4)), ("zero/kernel", (2, 3))]
    variables, values = [], {}
    for path, shape in specs:
        *scopes, name = path.split("/")
        value = (np.zeros(shape) if path.startswith("zero") else rng.normal(size=shape)).astype("float32")
        with contextlib.ExitStack() as stack:
            for scope in scopes:
                stack.enter_context(keras.name_scope(scope))
            variable = keras.Variable(value, name=name)
        assert variable.path == path
        variables.append(variable)
        values[path] = value.astype(np.float64)
    return variables, values


@pytest.mark.parametrize("optimizer_class", [AdamW, LAMB])
def test_two_updates_match_numpy_reference(optimizer_class):
    rng = np.random.default_rng(0)
    variables, values = make_variables(rng)
    lr = 0.01
    optimizer = optimizer_class(learning_rate=lr)
    moments = {p: (np.zeros_like(w), np.zeros_like(w)) for p, w in values.items()}
    for _ in range(2):  # the second step exercises non-zero moments
        grads = [rng.normal(size=v.shape).astype("float32") for v in variables]
        optimizer.apply([tf.constant(g) for g in grads], variables)
        for variable, g in zip(variables, grads):
            m, v = moments[variable.path]
            w, m, v = reference_update(variable.path, values[variable.path], g.astype(np.float64),
                                       m, v, lr, optimizer_class is LAMB)
            values[variable.path], moments[variable.path] = w, (m, v)
    for variable in variables:
        np.testing.assert_allclose(variable.numpy(), values[variable.path], atol=1e-6, rtol=0,
                                   err_msg=variable.path)


def test_sparse_gradients_update_like_dense_ones():
    """IndexedSlices (embedding lookups) are densified: every row's moments decay."""
    table = np.random.default_rng(1).normal(size=(5, 3)).astype("float32")
    rows = tf.IndexedSlices(tf.ones((2, 3)), tf.constant([1, 3]), tf.constant([5, 3]))
    results = []
    for grad in (rows, tf.convert_to_tensor(rows)):
        variable = keras.Variable(table, name="word_embeddings")
        optimizer = LAMB(learning_rate=0.01)
        for _ in range(2):
            optimizer.apply([grad], [variable])
        results.append(variable.numpy())
    np.testing.assert_allclose(results[0], results[1], atol=1e-7)


def test_exclusions_on_the_real_model_paths():
    """Decay and trust ratio skip exactly LayerNorm and bias variables (output_bias too)."""
    config = tiny_config()
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    optimizer = LAMB(learning_rate=0.001)
    excluded = {v.path for v in model.trainable_variables if not optimizer.uses_weight_decay(v)}
    expected = {v.path for v in model.trainable_variables
                if "layer_norm" in v.path or v.path.endswith("bias")}
    assert excluded == expected
    assert "mlm_head/output_bias" in excluded and "sop_head/output_bias" in excluded
    # Neighbouring excluded variables are all excluded (the original's Q16 skipped some).
    assert {"embeddings/layer_norm/gamma", "embeddings/layer_norm/beta"} <= excluded
    for path in ("embeddings/word_embeddings", "sop_head/output_weights",
                 "transformer/group_0_inner_group_0_attention/query/kernel"):
        assert path not in excluded
    adapted = {v.path for v in model.trainable_variables if optimizer.uses_layer_adaptation(v)}
    assert adapted == {v.path for v in model.trainable_variables} - expected


def test_slots_are_named_adam_m_and_adam_v():
    variable = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    optimizer = LAMB(learning_rate=0.1)
    optimizer.build([variable])
    names = sorted(v.path.rsplit("/", 1)[-1] for v in optimizer.variables)
    assert "kernel_adam_m" in names and "kernel_adam_v" in names


def reference_lr(t, lr, total, warmup, start, power):
    decayed = lr * (1 - min(t, total) / total) ** power
    if warmup and (t - start) < warmup:
        return lr * (t - start) / warmup
    return decayed


@pytest.mark.parametrize("warmup,start,power", [(10, 0, 1.0), (10, 4, 2.0), (0, 0, 0.5)])
def test_schedule_matches_formula_at_ten_steps(warmup, start, power):
    lr, total = 0.00176, 100
    schedule = WarmupPolynomialDecay(lr, total, warmup, start, power)
    for t in (0, 1, 3, 5, 9, 10, 14, 50, 99, 100):
        assert float(schedule(t)) == pytest.approx(reference_lr(t, lr, total, warmup, start, power),
                                                   rel=1e-6, abs=1e-12), t
    # Quirks kept (Q15): the first update uses LR 0; LR < 0 before start_warmup_step.
    if warmup and not start:
        assert float(schedule(0)) == 0.0
    if start:
        assert float(schedule(0)) < 0.0
    assert float(schedule(150)) == 0.0


def test_create_optimizer_rejects_unknown_names():
    with pytest.raises(ValueError, match="lamb"):
        create_optimizer("lambo", 0.1, 10)
    optimizer = create_optimizer("adamw", 0.1, 10, 2)
    assert isinstance(optimizer, AdamW) and isinstance(optimizer._learning_rate, WarmupPolynomialDecay)


def test_keras_gradient_aggregation_hook_still_exists():
    """`aggregate_gradients=False` relies on this Keras TF-backend method."""
    assert hasattr(keras.optimizers.Optimizer, "_all_reduce_sum_gradients")


# ----- how the training loop drives an optimizer -----
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_ours_take_the_loops_sum_and_float16_adds_loss_scaling(dtype):
    inner = create_optimizer("lamb", 0.1, 10)
    prepared = prepare_for_loop(inner, dtype, loop_clips=True, num_replicas=4)
    assert prepared.inner is inner and inner.aggregate_gradients is False
    assert prepared.pre_divide == 1.0  # the loop's cross-replica sum is applied as is
    assert prepared.loss_scaled == (dtype == "float16")
    if dtype == "float16":
        assert isinstance(prepared.optimizer, keras.optimizers.LossScaleOptimizer)
        assert prepared.optimizer.inner_optimizer is inner
    else:
        assert prepared.optimizer is inner


def test_a_wrapped_or_foreign_optimizer_and_one_that_clips():
    wrapped = keras.optimizers.LossScaleOptimizer(create_optimizer("adamw", 0.1, 10))
    prepared = prepare_for_loop(wrapped, "float32", loop_clips=True, num_replicas=2)
    assert prepared.optimizer is wrapped and prepared.inner is wrapped.inner_optimizer
    assert prepared.loss_scaled
    # Keras' own optimizers sum across replicas again: they get the sum divided by R.
    assert prepare_for_loop(keras.optimizers.SGD(0.1), "float32", True, 4).pre_divide == 0.25
    for clipping in ({"clipnorm": 1.0}, {"clipvalue": 1.0}, {"global_clipnorm": 1.0}):
        with pytest.raises(ValueError, match="already clips"):
            prepare_for_loop(keras.optimizers.SGD(0.1, **clipping), "float32", True, 1)
        # With the loop's clipping off (LoopConfig.clip_norm=None) the optimizer may clip.
        prepare_for_loop(keras.optimizers.SGD(0.1, **clipping), "float32", False, 1)


def test_learning_rate_at_reads_the_schedule_through_a_loss_scale_wrapper():
    optimizer = create_optimizer("adamw", 0.1, num_train_steps=100, num_warmup_steps=10)
    for step, expected in ((0, 0.0), (5, 0.05), (10, 0.09), (100, 0.0)):
        assert learning_rate_at(optimizer, step) == pytest.approx(
            reference_lr(step, 0.1, 100, 10, 0, 1.0), rel=1e-6, abs=1e-9)
        assert learning_rate_at(keras.optimizers.LossScaleOptimizer(optimizer), step) == \
            pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert learning_rate_at(keras.optimizers.SGD(0.25), 7) == 0.25  # a constant rate
