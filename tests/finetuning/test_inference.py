"""Predictor: every output and passthrough key, in input order, the last partial batch kept,
one trace for every batch size and sequence length; the same predictions on 2 replicas."""

from __future__ import annotations

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.finetuning import inference
from albert_tf.finetuning.inference import Predictor
from albert_tf.training.input_options import without_autotune
from tests.training import processes


def _model() -> keras.Model:
    """ids [B, S] → total [B] (float), doubled [B, S] (float), largest [B] (int)."""
    ids = keras.Input((None,), dtype="int32", name="ids")
    values = keras.ops.cast(ids, "float32")
    return keras.Model({"ids": ids}, {"total": keras.ops.sum(values, axis=-1), "doubled": 2.0 * values,
                             "largest": keras.ops.max(ids, axis=-1)})


def _dataset(ids: np.ndarray, batch_size: int) -> tf.data.Dataset:
    rows = np.arange(len(ids), dtype=np.int64)
    return tf.data.Dataset.from_tensor_slices(({"x": ids}, {"row": rows})).batch(batch_size)


@pytest.mark.parametrize("freeze", [False, True])
def test_outputs_passthrough_and_partial_batches_in_order(caplog, freeze):
    rng = np.random.default_rng(0)
    predictor = Predictor(_model(), outputs=("total", "doubled", "largest"),
                          model_inputs=lambda features: {"ids": features["x"]}, log_every=2,
                          freeze_weights=freeze)
    for rows, length, batch in ((12, 4, 5), (7, 6, 3)):  # last batches of 2 and 1 rows
        ids = rng.integers(0, 50, (rows, length)).astype(np.int32)
        with caplog.at_level(logging.INFO, logger="absl"):
            result = predictor.run(_dataset(ids, batch), num_examples=rows)
        np.testing.assert_array_equal(result["row"], np.arange(rows))
        np.testing.assert_allclose(result["total"], ids.sum(axis=1))
        np.testing.assert_allclose(result["doubled"], 2 * ids)
        np.testing.assert_array_equal(result["largest"], ids.max(axis=1))
        assert result["total"].dtype == np.float32 and result["largest"].dtype == np.int32
    # Batch sizes 5, 2, 3, 1 and lengths 4, 6: one trace (per run with frozen weights).
    assert predictor.num_traces == (2 if freeze else 1)
    assert "6/7 examples" in caplog.text and "examples/s" in caplog.text and "ETA" in caplog.text


def test_prediction_iterates_its_data_without_the_autotuner(monkeypatch):
    """Each run reads the batches as given, through a dataset whose tf.data autotuning is off
    (tests/training/test_input_options.py tests the option itself)."""
    ids = np.arange(30, dtype=np.int32).reshape(10, 3)
    iterated = []
    monkeypatch.setattr(inference, "without_autotune",
                        lambda d: iterated.append(without_autotune(d)) or iterated[-1])
    predictor = Predictor(_model(), outputs=("total",),
                          model_inputs=lambda features: {"ids": features["x"]})
    result = predictor.run(_dataset(ids, 4))
    assert len(iterated) == 1 and iterated[0].options().autotune.enabled is False
    np.testing.assert_allclose(result["total"], ids.sum(axis=1))


def test_features_alone_and_unknown_outputs():
    ids = np.arange(6, dtype=np.int32).reshape(3, 2)
    inputs = keras.Input((None,), dtype="int32", name="ids")
    model = keras.Model({"ids": inputs}, {"total": keras.ops.sum(inputs, axis=-1)})
    result = Predictor(model, outputs=("total",)).run(
        tf.data.Dataset.from_tensor_slices({"ids": ids}).batch(2))
    np.testing.assert_array_equal(result["total"], [1, 5, 9])
    with pytest.raises(KeyError, match=r"no output\(s\) logits \(it has total\)"):
        Predictor(model)  # GLUE's default output name


def test_xla_compiled_model_call_predicts_the_same(caplog):
    """jit_compile=True (the XLA graph, compiled once per padded length) gives the plain
    graph's outputs; still one trace for every batch size and length."""
    rng = np.random.default_rng(1)
    data = [rng.integers(0, 50, (5, n)).astype(np.int32) for n in (4, 8)]
    outputs = {}
    for jit in (False, True):
        predictor = Predictor(_model(), outputs=("total", "doubled"), jit_compile=jit,
                              model_inputs=lambda features: {"ids": features["x"]},
                              freeze_weights=False)
        with caplog.at_level(logging.INFO, logger="absl"):
            outputs[jit] = [predictor.run(_dataset(ids, 2)) for ids in data]
        assert predictor.num_traces == 1
    for plain, xla in zip(outputs[False], outputs[True]):
        np.testing.assert_allclose(xla["total"], plain["total"])
        np.testing.assert_allclose(xla["doubled"], plain["doubled"])
    assert "XLA compiles once per padded length" in caplog.text


def _dense_model(seed: int = 0) -> keras.Model:
    """features x [B, S, 4] float → y = x·W + b [B, S, 3] and its argmax, one Dense layer."""
    x = keras.Input((None, 4), name="x")
    dense = keras.layers.Dense(3, kernel_initializer=keras.initializers.RandomNormal(seed=seed),
                               bias_initializer=keras.initializers.RandomNormal(seed=seed + 1))
    y = dense(x)
    return keras.Model({"x": x}, {"y": y, "best": keras.ops.argmax(y, axis=-1)})


def _numpy_dense(model: keras.Model, x: np.ndarray) -> np.ndarray:
    kernel, bias = (w.numpy() for w in model.weights)
    return x.astype(np.float64) @ kernel + bias


def test_frozen_weights_predict_the_variables_values_of_each_run():
    """Frozen, the weights are graph constants read at the start of each run: the outputs
    equal x·W + b of the weights at that run, also after the variables change."""
    model = _dense_model()
    x = np.random.default_rng(2).normal(size=(5, 6, 4)).astype(np.float32)
    data = tf.data.Dataset.from_tensor_slices({"x": x}).batch(2)
    predictor = Predictor(model, outputs=("y", "best"), freeze_weights=True)
    first = predictor.run(data)
    np.testing.assert_allclose(first["y"], _numpy_dense(model, x), rtol=1e-5, atol=1e-6)
    for weight in model.weights:  # as training would between two evaluations
        weight.assign(weight.numpy() * -2.0 + 0.5)
    second = predictor.run(data)
    np.testing.assert_allclose(second["y"], _numpy_dense(model, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(second["best"], _numpy_dense(model, x).argmax(-1))
    assert predictor.num_traces == 2


def test_frozen_graph_holds_no_variable_reads():
    """The step of a frozen run reads no variable: the weights are constants of its graph."""
    model = _dense_model()
    predictor = Predictor(model, outputs=("y",), freeze_weights=True)
    predictor.run(tf.data.Dataset.from_tensor_slices({"x": np.ones((2, 3, 4), "float32")}).batch(2))
    graph = predictor._step.get_concrete_function().graph.as_graph_def()
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    assert "ReadVariableOp" not in ops and "VarHandleOp" not in ops
    assert "Const" in ops


@pytest.mark.parametrize("make_strategy, frozen", [
    (tf.distribute.get_strategy, True),
    (lambda: tf.distribute.OneDeviceStrategy("/cpu:0"), True),
    (lambda: tf.distribute.MirroredStrategy(["/cpu:0"]), False),
])
def test_the_freezing_rule_decides_only_on_one_cpu_device(monkeypatch, make_strategy, frozen):
    """Where the rule says so (mocked: the table is per CPU profile, tested in
    tests/test_execution_rules.py), the default and one-device strategies freeze, asking it
    with the dtype and the run's batches; mirrored ones read the variables. Same outputs."""
    asked = []
    monkeypatch.setattr(inference, "freeze_for_prediction",
                        lambda *args: asked.append(args) or True)
    strategy = make_strategy()
    with strategy.scope():
        model = _dense_model()
    x = np.random.default_rng(3).normal(size=(4, 2, 4)).astype(np.float32)
    predictor = Predictor(model, strategy, outputs=("y",), dtype="bfloat16")
    result = predictor.run(tf.data.Dataset.from_tensor_slices({"x": x}).batch(3))
    assert predictor.freeze_weights is frozen
    assert asked == ([("bfloat16", 2)] if frozen else [])
    np.testing.assert_allclose(result["y"], _numpy_dense(model, x), rtol=1e-5, atol=1e-6)


def test_no_freezing_where_the_rule_says_no_or_with_xla(monkeypatch):
    """The rule's no (fp32, other CPUs, short runs) and XLA-compiled prediction read the
    variables."""
    data = tf.data.Dataset.from_tensor_slices({"x": np.ones((2, 3, 4), "float32")}).batch(2)
    for rule, jit in ((False, False), (True, True)):
        monkeypatch.setattr(inference, "freeze_for_prediction", lambda *args, rule=rule: rule)
        predictor = Predictor(_dense_model(), outputs=("y",), jit_compile=jit)
        predictor.run(data)
        assert predictor.freeze_weights is False


def _task_model(name: str, policy: str) -> keras.Model:
    from albert_tf.models.classifier import AlbertClassifier
    from albert_tf.models.span_labeler import AlbertSpanLabeler
    from tests.conftest import tiny_config

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        model = (AlbertClassifier(tiny_config(), num_classes=3) if name == "classifier"
                 else AlbertSpanLabeler(tiny_config(), version_2_with_negative=True))
    finally:
        keras.config.set_dtype_policy(previous)
    rng = np.random.default_rng(4)  # weights far from the initialisers' ±0.02: outputs ≈ 1
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(weight.dtype))
    return model


@pytest.mark.parametrize("policy, tolerance", [("float32", 1e-5), ("mixed_bfloat16", 0.05)])
@pytest.mark.parametrize("name", ["classifier", "squad_v2"])
def test_albert_task_models_predict_the_same_on_frozen_weights(name, policy, tolerance):
    """GLUE's classifier and SQuAD v2's head (its model_inputs add start_positions=None, as
    the SQuAD runner's do) give the variables' outputs on frozen weights: within float32
    round-off, and within a few bf16 steps (2⁻⁸ relative) of logits of size ≈ 1 in bf16."""
    from tests.conftest import random_inputs, tiny_config

    feed = random_inputs(tiny_config(), batch=5, seq=12)
    features = {k: feed[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    outputs, model_inputs = ("logits",), None
    if name == "squad_v2":
        features["p_mask"] = 1 - feed["input_type_ids"]
        outputs = ("start_top_log_probs", "end_top_log_probs", "cls_logits")
        model_inputs = lambda f: {**f, "start_positions": None}  # noqa: E731
    model = _task_model(name, policy)
    data = tf.data.Dataset.from_tensor_slices(features).batch(2)
    results = [Predictor(model, outputs=outputs, model_inputs=model_inputs,
                         freeze_weights=freeze).run(data) for freeze in (False, True)]
    for key in outputs:
        assert np.abs(results[0][key]).max() > 0.1, key  # not a vacuous comparison
        np.testing.assert_allclose(results[1][key], results[0][key], rtol=tolerance,
                                   atol=tolerance, err_msg=key)


def test_mirrored_two_cpus_predict_as_one_device(spm_model, tmp_path):
    """SQuAD v2 through the shared path: 56 questions in batches of 7 split over 2 replicas."""
    result = processes.run(["-m", "tests.finetuning.scripts.mirrored_squad_predict", spm_model,
                            str(tmp_path)], timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = json.loads(result.stdout.strip().splitlines()[-1])
    one, two = runs["one_device"], runs["mirrored"]
    assert (one["replicas"], two["replicas"]) == (1, 2)
    assert len(one["predictions"]) == 56 and two["predictions"] == one["predictions"]
    assert sorted(two["null_odds"]) == sorted(one["null_odds"])
    for qas_id, odds in one["null_odds"].items():
        assert two["null_odds"][qas_id] == pytest.approx(odds, abs=1e-5), qas_id
    for qas_id, (text, probability, lead) in one["nbest_top"].items():
        assert two["nbest_top"][qas_id][1] == pytest.approx(probability, abs=1e-5), qas_id
        if lead > 1e-5:
            assert two["nbest_top"][qas_id][0] == text, qas_id
    assert two["eval_results"] == one["eval_results"]


def test_the_graph_choice_counts_the_batches_and_lengths_the_data_has(caplog):
    """Issue 28: with length buckets each bucket ends in a partial batch, so the batches are
    more than ⌈examples / batch size⌉, and only the lengths the data reaches are used. The
    first log line gives the counts the per-length table then adds up to."""
    from albert_tf.finetuning.bucketing import LengthBuckets

    lengths = [2, 18, 40, 7, 33, 9, 22, 3]  # padded to 16, 32 or 48 of the buckets up to 64
    batch_size, step = 3, 16
    ids = np.zeros((len(lengths), 64), np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = 1
    per_length: dict[int, int] = {}
    for length in lengths:
        padded = -(-length // step) * step
        per_length[padded] = per_length.get(padded, 0) + 1
    batches = {length: -(-count // batch_size) for length, count in sorted(per_length.items())}
    total = sum(batches.values())
    assert (total, len(batches)) == (4, 3)  # not ⌈8 / 3⌉ = 3 batches, not all 4 lengths
    dataset = LengthBuckets(64, step).eval_batches(
        tf.data.Dataset.from_tensor_slices(({"x": ids, "input_mask": ids},
                                            {"row": np.arange(len(lengths))})), batch_size)
    predictor = Predictor(_model(), outputs=("total",), jit_compile=None,
                          model_inputs=lambda features: {"ids": features["x"]})
    with caplog.at_level(logging.INFO, logger="absl"):
        result = predictor.run(dataset, num_examples=len(lengths), description="Predicting")
    np.testing.assert_array_equal(result["row"], np.arange(len(lengths)))
    assert (f"({total} batches, {len(batches)} padded length(s); benchmarks/RESULTS.md)"
            in caplog.text)
    table = ", ".join(f"{length}: {count}" for length, count in batches.items())
    assert f"Predicting: batches per padded length: {table}" in caplog.text


@pytest.mark.parametrize("on_cpu, expected", [(True, True), (False, False)])
def test_the_xla_table_decides_only_on_cpus(monkeypatch, on_cpu, expected):
    """The execution-rule table is measured on CPUs: where the replicas are GPUs (or TPUs) an
    undecided Predictor takes the graph, as the Trainer does, whatever the CPU's table says."""
    import albert_tf.finetuning.inference as inference

    asked = []
    monkeypatch.setattr(inference, "runs_on_cpu", lambda strategy: on_cpu)
    monkeypatch.setattr(inference, "use_xla", lambda *args: asked.append(args) or True)
    predictor = Predictor(_model(), outputs=("total",), jit_compile=None, dtype="bfloat16",
                          model_inputs=lambda features: {"ids": features["x"]})
    ids = np.ones((4, 8), np.int32)
    result = predictor.run(_dataset(ids, 2))
    np.testing.assert_array_equal(result["total"], np.full(4, 8.0))
    assert predictor.jit_compile is expected
    assert asked == ([("predict", "bfloat16", 2, 1)] if on_cpu else [])
