"""--dtype=bfloat16 for evaluation and prediction (not only training), in every script: the
same weights give metrics and outputs close to float32's, within bfloat16's rounding.

Tolerances: bfloat16 keeps 8 significant bits (u = 2^-8 ≈ 0.4 % per rounding); the tiny
models' logits move by a few u relative (tests/export/test_bfloat16_export.py), so losses
agree to ~1e-2 relative; an argmax can flip only where two logits are that close, so
accuracies agree to within an example or two of these small fixture sets.
"""

from __future__ import annotations

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, checkpoints
from albert_tf.data import features as F
from albert_tf.glue.runner import GlueRunOptions, run as run_glue
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.race.runner import RaceRunOptions, run as run_race
from albert_tf.squad.runner import SquadRunOptions, run as run_squad
from albert_tf.checkpoints.ours import keyed_variables
from albert_tf.pretraining import runner as pretraining_run
from tests.conftest import tiny_config
from tests.data import record_files
from tests.glue.conftest import FIXTURES as GLUE_FIXTURES
from tests.race.conftest import fixture_dir as race_fixture_dir
from tests.squad.conftest import fixture_path as squad_fixture

DTYPES = ("float32", "bfloat16")
LOSS_RTOL = 2.0 ** -5  # 8u, as the export test


def encoder_checkpoint(directory, config: AlbertConfig, seed: int = 5) -> str:
    """A random encoder (initializer_range 0.1: outputs that depend on the input) saved as an
    original TF1 checkpoint; the task heads start from the seed set before each run."""
    keras.utils.set_random_seed(seed)
    encoder = AlbertEncoder(config)
    encoder({k: np.zeros((1, 4), np.int32) for k in ("input_word_ids", "input_mask", "input_type_ids")})
    return checkpoints.save_original_checkpoint(encoder, str(directory / "init" / "model.ckpt"))


def test_glue_eval_and_predict_in_bfloat16(tmp_path, spm_model, caplog):
    config = tiny_config(vocab_size=1000, max_position_embeddings=64, initializer_range=0.1)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    init = encoder_checkpoint(tmp_path, config)
    results, probabilities = {}, {}
    for dtype in DTYPES:
        keras.utils.set_random_seed(3)  # the same classifier head in both runs
        out = tmp_path / dtype
        with caplog.at_level(logging.INFO, logger="absl"):
            result = run_glue(GlueRunOptions(
                data_dir=GLUE_FIXTURES, task_name="mrpc", output_dir=str(out),
                albert_config_file=config_file, spm_model_file=spm_model, max_seq_length=32,
                eval_batch_size=3, predict_batch_size=2, do_eval=True, do_predict=True,
                init_checkpoint=init, train_step=0, dtype=dtype))  # 0: no trainer to follow
        results[dtype] = result.eval_results[-1]
        probabilities[dtype] = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)
    # A few batches cannot repay XLA's compiles: the plain graph (execution_rules.use_xla).
    assert "Prediction runs the model in the tf.function graph under --dtype=bfloat16" in caplog.text
    fp32, bf16 = results["float32"], results["bfloat16"]
    assert bf16["eval_loss"] == pytest.approx(fp32["eval_loss"], rel=LOSS_RTOL)
    assert bf16["eval_accuracy"] == pytest.approx(fp32["eval_accuracy"], abs=0.25)  # ≤ 1 of 4
    assert fp32["eval_loss"] != bf16["eval_loss"]  # bfloat16 really ran
    np.testing.assert_allclose(probabilities["bfloat16"], probabilities["float32"], atol=2e-2)


def test_race_eval_and_predict_in_bfloat16(tmp_path, spm_model):
    config = AlbertConfig(vocab_size=1000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                          initializer_range=0.1)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    init = encoder_checkpoint(tmp_path, config)
    results = {}
    for dtype in DTYPES:
        keras.utils.set_random_seed(3)
        result = run_race(RaceRunOptions(
            data_dir=race_fixture_dir(), output_dir=str(tmp_path / dtype), max_seq_length=64,
            max_qa_length=16, eval_batch_size=2, predict_batch_size=2, do_train=False,
            do_eval=True, do_predict=True, albert_config_file=config_file,
            spm_model_file=spm_model, init_checkpoint=init, train_step=0, dtype=dtype))
        results[dtype] = result.eval_results[-1]
        assert (tmp_path / dtype / "predictions.tsv").exists()
    fp32, bf16 = results["float32"], results["bfloat16"]
    assert bf16["eval_loss"] == pytest.approx(fp32["eval_loss"], rel=LOSS_RTOL)
    assert bf16["eval_accuracy"] == pytest.approx(fp32["eval_accuracy"], abs=0.34)


def test_pretraining_eval_in_bfloat16(tmp_path):
    """run_pretraining --do_eval (no training) of one float32 checkpoint, under both dtypes."""
    seq, pred = 16, 4
    config = tiny_config(vocab_size=100, max_position_embeddings=32, initializer_range=0.1)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    records = record_files.write(str(tmp_path / "eval.tfrecord"), record_files.rows(16, seq, pred),
                                 summary=record_files.summary_of(F.STATIC, seq, pred, vocab_size=100))
    keras.utils.set_random_seed(1)
    pretrainer = AlbertPretrainer(config)
    results = {}
    for dtype in DTYPES:
        out = tmp_path / dtype
        # The loop's checkpoint layout (what --do_train writes), read by --do_eval alone;
        # save() names it model.ckpt-1, so --num_train_steps=1 makes it the final step to follow.
        tf.train.Checkpoint(model=keyed_variables(pretrainer.variables),
                            global_step=tf.Variable(0, dtype=tf.int64)).save(str(out / "model.ckpt"))
        results[dtype] = pretraining_run.run(pretraining_run.PretrainingRunOptions(
            albert_config_file=config_file, input_file=records, output_dir=str(out),
            max_seq_length=seq, max_predictions_per_seq=pred, do_train=False, do_eval=True,
            eval_batch_size=4, max_eval_steps=4, num_train_steps=1, dtype=dtype))
    fp32, bf16 = results["float32"], results["bfloat16"]
    assert bf16["loss"] == pytest.approx(fp32["loss"], rel=LOSS_RTOL)
    assert bf16["masked_lm_accuracy"] == pytest.approx(fp32["masked_lm_accuracy"], abs=0.13)
    assert fp32["loss"] != bf16["loss"]  # bfloat16 really ran


def test_squad_v2_predict_in_bfloat16(tmp_path, spm_model):
    """run_squad --do_predict (v2: span and answerability heads) under both dtypes: the
    null odds (score differences of float32 logits) agree within bfloat16's rounding."""
    config = AlbertConfig(vocab_size=1000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                          initializer_range=0.1)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    init = encoder_checkpoint(tmp_path, config)
    odds, scores = {}, {}
    for dtype in DTYPES:
        keras.utils.set_random_seed(3)
        result = run_squad(SquadRunOptions(
            albert_config_file=config_file, spm_model_file=spm_model,
            output_dir=str(tmp_path / dtype), predict_file=squad_fixture("dev-v2.0.json"),
            do_train=False, do_predict=True, max_seq_length=96, doc_stride=48,
            max_query_length=16, predict_batch_size=32, version_2_with_negative=True,
            start_n_top=3, end_n_top=3, init_checkpoint=init, dtype=dtype))
        scores[dtype] = result.eval_results[-1]
        with open(tmp_path / dtype / "null_odds.json", encoding="utf-8") as f:
            odds[dtype] = json.load(f)
    assert sorted(odds["bfloat16"]) == sorted(odds["float32"])
    want = np.array([odds["float32"][k] for k in sorted(odds["float32"])])
    got = np.array([odds["bfloat16"][k] for k in sorted(odds["float32"])])
    assert np.abs(got - want).max() <= LOSS_RTOL * max(1.0, np.abs(want).max())
    assert not np.array_equal(got, want)  # bfloat16 really ran
    for key in ("exact", "f1", "best_f1"):
        assert scores["bfloat16"][key] == pytest.approx(scores["float32"][key], abs=10.0), key
