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


def test_outputs_passthrough_and_partial_batches_in_order(caplog):
    rng = np.random.default_rng(0)
    predictor = Predictor(_model(), outputs=("total", "doubled", "largest"),
                          model_inputs=lambda features: {"ids": features["x"]}, log_every=2)
    for rows, length, batch in ((12, 4, 5), (7, 6, 3)):  # last batches of 2 and 1 rows
        ids = rng.integers(0, 50, (rows, length)).astype(np.int32)
        with caplog.at_level(logging.INFO, logger="absl"):
            result = predictor.run(_dataset(ids, batch), num_examples=rows)
        np.testing.assert_array_equal(result["row"], np.arange(rows))
        np.testing.assert_allclose(result["total"], ids.sum(axis=1))
        np.testing.assert_allclose(result["doubled"], 2 * ids)
        np.testing.assert_array_equal(result["largest"], ids.max(axis=1))
        assert result["total"].dtype == np.float32 and result["largest"].dtype == np.int32
    assert predictor.num_traces == 1  # batch sizes 5, 2, 3, 1 and lengths 4, 6: one trace
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
                              model_inputs=lambda features: {"ids": features["x"]})
        with caplog.at_level(logging.INFO, logger="absl"):
            outputs[jit] = [predictor.run(_dataset(ids, 2)) for ids in data]
        assert predictor.num_traces == 1
    for plain, xla in zip(outputs[False], outputs[True]):
        np.testing.assert_allclose(xla["total"], plain["total"])
        np.testing.assert_allclose(xla["doubled"], plain["doubled"])
    assert "XLA compiles once per padded length" in caplog.text


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
