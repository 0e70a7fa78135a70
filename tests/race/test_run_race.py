"""End to end on a tiny model (H=32, 2 layers): train, eval, predict; warm starts; the CLI."""

import json
import os
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, checkpoints
from albert_tf.models import AlbertEncoder
from albert_tf.race.examples import read_race_split
from albert_tf.race.features import convert_examples_to_features
from albert_tf.race.predictions import read_predictions
from albert_tf.race.runner import RaceRunOptions, run
from tests.in_process_tools import run_tool
from tests.race.conftest import copy_fixtures, fixture_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQ, QA = 64, 16
METRICS = {"eval_accuracy", "eval_accuracy_middle", "eval_accuracy_high", "eval_loss", "loss",
           "global_step"}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory, tokenizer):
    config = AlbertConfig(vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=SEQ)
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    config.to_json_file(path)
    return path


def _options(output_dir, **overrides):
    values = dict(data_dir=fixture_dir(), output_dir=str(output_dir), max_seq_length=SEQ,
                  max_qa_length=QA, train_batch_size=2, eval_batch_size=2, predict_batch_size=2,
                  learning_rate=1e-3, train_step=4, warmup_step=1, save_checkpoints_steps=2,
                  log_steps=2, seed=1)
    values.update(overrides)
    return RaceRunOptions(**values)


def _key_values(path):
    with open(path, encoding="utf-8") as f:
        return dict(line.split(" = ", 1) for line in f.read().splitlines() if " = " in line)


def _answers(data_dir, split):
    """{(id, question index): letter} of a split's articles."""
    found = {}
    for level in ("middle", "high"):
        level_dir = os.path.join(data_dir, "RACE", split, level)
        for name in os.listdir(level_dir):
            with open(os.path.join(level_dir, name), encoding="utf-8") as f:
                article = json.load(f)
            for i, letter in enumerate(article.get("answers", [])):
                found[(article["id"], i)] = letter
    return found


@pytest.fixture(scope="module")
def trained(tmp_path_factory, config_file, spm_model):
    """One run with the original's defaults do_train + do_eval, plus do_predict."""
    output_dir = tmp_path_factory.mktemp("race_out")
    options = _options(output_dir, albert_config_file=config_file, spm_model_file=spm_model,
                       do_predict=True)
    assert options.do_train and options.do_eval  # the original's defaults
    return output_dir, run(options)


def test_train_evaluates_every_checkpoint_and_keeps_the_best(trained):
    output_dir, result = trained
    assert [r["global_step"] for r in result.eval_results] == [2, 4]
    for results in result.eval_results:
        assert METRICS <= set(results)
        assert 0.0 <= results["eval_accuracy"] <= 1.0
    best = max(result.eval_results, key=lambda r: r["eval_accuracy"])  # the first on ties
    assert result.best_step == best["global_step"]
    assert os.path.exists(output_dir / "model.ckpt-best.index")
    text = (output_dir / "eval_results.txt").read_text()
    assert text.count("eval_accuracy_middle = ") == 2 and "best = " in text
    assert "loss" in result.train_logs and "accuracy" in result.train_logs
    assert tf.io.gfile.glob(str(output_dir / "eval" / "events.out.tfevents.*"))


def test_predictions_file_and_test_metrics(trained):
    output_dir, result = trained
    rows = read_predictions(str(output_dir / "predictions.tsv"))
    assert [(i, q) for i, q, _ in rows] == [("middle1.txt", 0), ("middle1.txt", 1), ("high1.txt", 0)]
    answers = _answers(fixture_dir(), "test")
    right = [answers[(i, q)] == letter for i, q, letter in rows]
    written = _key_values(output_dir / "predict_results.txt")
    # The reported accuracy is the one of the written predictions.
    assert float(written["eval_accuracy"]) == pytest.approx(np.mean(right))
    assert float(written["eval_accuracy_middle"]) == pytest.approx(np.mean(right[:2]))
    assert float(written["eval_accuracy_high"]) == pytest.approx(float(right[2]))
    assert float(written["best_dev_eval_accuracy"]) == pytest.approx(
        result.best_results["eval_accuracy"])
    assert written["checkpoint"].endswith("model.ckpt-best")


def test_feature_caches_hold_the_original_layout(trained, tokenizer):
    output_dir, _ = trained
    for name in ("train.tf_record", "eval.tf_record", "predict.tf_record"):
        assert os.path.exists(output_dir / name)
        assert os.path.exists(output_dir / f"{name}.settings.json")
    examples = read_race_split(fixture_dir(), "dev").examples
    want = convert_examples_to_features(examples, tokenizer, SEQ, QA)
    records = list(tf.data.TFRecordDataset(str(output_dir / "eval.tf_record")))
    assert len(records) == len(examples)
    for n, record in enumerate(records):
        example = tf.train.Example.FromString(record.numpy()).features.feature
        assert sorted(example) == ["input_ids", "input_mask", "is_real_example", "label_ids",
                                   "segment_ids"]
        assert list(example["input_ids"].int64_list.value) == want.input_ids[n].reshape(-1).tolist()
        assert len(example["segment_ids"].int64_list.value) == 4 * SEQ
        assert list(example["label_ids"].int64_list.value) == [want.label_ids[n]]
        assert list(example["is_real_example"].int64_list.value) == [1]


def test_predict_without_labels_from_our_checkpoint(trained, config_file, spm_model, tmp_path,
                                                    caplog):
    """Q28 fixed: a test set without answers; weights from --init_checkpoint (ours)."""
    source_dir, _ = trained
    data_dir = copy_fixtures(tmp_path)
    for level in ("middle", "high"):
        path = os.path.join(data_dir, "RACE", "test", level, "1.txt")
        with open(path, encoding="utf-8") as f:
            article = json.load(f)
        del article["answers"]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(article, f)
    output_dir = tmp_path / "predict_only"
    options = _options(output_dir, data_dir=data_dir, albert_config_file=config_file,
                       spm_model_file=spm_model, do_train=False, do_eval=False, do_predict=True,
                       init_checkpoint=str(source_dir / "model.ckpt-best"))
    with caplog.at_level("INFO", logger="absl"):
        result = run(options)
    report = result.restore_report
    assert report.kind == "albert-tf"
    assert report.encoder_restored == report.encoder_total and report.head_restored == 2
    assert any("Warm start: restored" in r.getMessage() for r in caplog.records)
    rows = read_predictions(str(output_dir / "predictions.tsv"))
    assert len(rows) == 3 and result.predict_results is None
    assert not os.path.exists(output_dir / "predict_results.txt")
    # Same weights, same features: the same predictions as the run that trained them.
    assert rows == read_predictions(str(source_dir / "predictions.tsv"))


def test_eval_only_from_an_original_checkpoint(config_file, spm_model, tmp_path, caplog):
    config = AlbertConfig.from_json_file(config_file)
    encoder = AlbertEncoder(config)
    encoder({k: np.zeros((1, 4), np.int32) for k in ("input_word_ids", "input_mask", "input_type_ids")})
    init = checkpoints.save_original_checkpoint(encoder, str(tmp_path / "init" / "model.ckpt"))
    with caplog.at_level("INFO", logger="absl"):
        result = run(_options(tmp_path / "out", albert_config_file=config_file,
                              spm_model_file=spm_model, do_train=False, init_checkpoint=init,
                              middle_only=True, train_step=0))  # 0: no training run to follow
    report = result.restore_report
    assert report.kind == "original TF1" and report.head_restored == 0
    assert report.encoder_restored == report.encoder_total
    assert report.missing == ["output_weights", "output_bias"]
    assert any("left as initialised: output_weights, output_bias" in r.getMessage()
               for r in caplog.records)
    (evaluation,) = result.eval_results
    assert evaluation["global_step"] == 0 and "eval_accuracy_high" not in evaluation
    assert "eval_accuracy_middle" in evaluation


def test_fine_tunes_an_encoder_export(config_file, spm_model, tmp_path, caplog):
    """--albert_hub_module_handle: config and tokenizer from the export, its variables train.
    The log's counts agree: the export's variables, and RACE's fresh [1, H] head (issue 28)."""
    from albert_tf.export.tfhub import export_encoder

    config = AlbertConfig.from_json_file(config_file)
    handle = export_encoder(config, None, str(tmp_path / "export"), spm_model, True, False)
    with caplog.at_level("INFO", logger="absl"):
        result = run(_options(tmp_path / "out", albert_hub_module_handle=handle, train_step=2,
                              do_eval=False, do_predict=True))
    assert result.train_logs["loss"] > 0
    exported = len(tf.saved_model.load(handle).trainable_variables)
    head = 2  # output_weights [1, H] and output_bias [1]
    assert (f"Initial weights: all {exported} encoder variables from the export {handle}"
            in caplog.text)
    assert (f"{exported + head} trainable variables ({exported} encoder variables from the "
            f"export, {head} classifier-head variables freshly initialised)") in caplog.text
    assert "fresh initialisation" not in caplog.text
    assert len(read_predictions(str(tmp_path / "out" / "predictions.tsv"))) == 3


def test_stale_named_cache_is_refused(config_file, spm_model, tmp_path):
    from albert_tf.finetuning.feature_cache import FeatureCacheError

    common = dict(albert_config_file=config_file, spm_model_file=spm_model, do_train=False,
                  do_eval=False, do_predict=True, predict_file=str(tmp_path / "test.tf_record"))
    with pytest.raises(ValueError, match="no weights to use"):
        run(_options(tmp_path / "a", **common))  # builds the cache, then finds no weights
    with pytest.raises(FeatureCacheError, match=r"test\.tf_record: cached features were built "
                                                r"with max_qa_length=16 \(now 8\)"):
        run(_options(tmp_path / "b", max_qa_length=8, **common))


def test_summary_names_only_the_levels_read(config_file, spm_model, tmp_path, caplog):
    """Issue 28: with the high directory absent, the split's line counts the middle
    questions and names that level alone."""
    data_dir = copy_fixtures(tmp_path)
    shutil.rmtree(os.path.join(data_dir, "RACE", "test", "high"))
    middle = os.path.join(data_dir, "RACE", "test", "middle")
    questions = 0
    for name in os.listdir(middle):
        with open(os.path.join(middle, name), encoding="utf-8") as f:
            questions += len(json.load(f)["questions"])
    with caplog.at_level("INFO", logger="absl"), pytest.raises(ValueError, match="no weights"):
        run(_options(tmp_path / "out", data_dir=data_dir, albert_config_file=config_file,
                     spm_model_file=spm_model, do_train=False, do_eval=False, do_predict=True))
    assert "RACE test: no high directory" in caplog.text
    assert f"RACE test: {questions} questions (middle)\n" in caplog.text


def _cli(args):
    """run_race's command line in this process (absl parses it, `cli.run_script` reports
    errors, as `python run_race.py` does; `python run_x.py` as a process: tests/test_script_flags.py)."""
    return run_tool("albert_tf.run_race", *args)


def test_cli_bad_input_is_one_line_and_nonzero_exit(config_file, spm_model, tmp_path):
    data_dir = copy_fixtures(tmp_path)
    bad = os.path.join(data_dir, "RACE", "train", "high", "2.txt")
    with open(bad, encoding="utf-8") as f:
        article = json.load(f)
    article["answers"] = ["E"]
    with open(bad, "w", encoding="utf-8") as f:
        json.dump(article, f)
    output_dir = tmp_path / "out"
    completed = _cli([f"--data_dir={data_dir}", f"--albert_config_file={config_file}",
                      f"--spm_model_file={spm_model}", f"--output_dir={output_dir}",
                      f"--max_seq_length={SEQ}", f"--max_qa_length={QA}"])
    assert completed.status == 1
    lines = completed.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("run_race")] == lines[-1:] == [
        f"run_race: error: {bad}: question 1: answer 'E' is not one of A, B, C, D"]
    assert "Traceback" not in completed.stderr and not os.path.exists(output_dir)


def _key_value_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split(" = ", 1) for line in f.read().splitlines() if " = " in line]


def test_length_bucketed_eval_and_predict_equal_padded(tokenizer, spm_model, tmp_path, caplog):
    """--bucket_by_length on [4, S] inputs (bucketed by the longest option): the same
    eval_results.txt, predict_results.txt and predictions.tsv as padding to max_seq_length."""
    config = AlbertConfig(vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=128)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    keras.utils.set_random_seed(5)
    encoder = AlbertEncoder(config)
    encoder({k: np.zeros((1, 4), np.int32) for k in ("input_word_ids", "input_mask", "input_type_ids")})
    init = checkpoints.save_original_checkpoint(encoder, str(tmp_path / "init" / "model.ckpt"))
    data_dir = copy_fixtures(tmp_path)  # plus one short article per split: several lengths
    for split in ("dev", "test"):
        with open(os.path.join(data_dir, "RACE", split, "middle", "2.txt"), "w") as f:
            json.dump({"answers": ["A"], "options": [["red", "blue", "green", "black"]],
                       "questions": ["Colour?"], "article": "The ball is red.", "id": "m2"}, f)
    outputs = {}
    for bucketed in (False, True):
        keras.utils.set_random_seed(3)  # the same head in both runs
        outputs[bucketed] = out = tmp_path / f"bucketed_{bucketed}"
        with caplog.at_level("INFO", logger="absl"):
            run(_options(out, data_dir=data_dir, albert_config_file=config_file,
                         spm_model_file=spm_model, max_seq_length=128, eval_batch_size=1,
                         predict_batch_size=1, do_train=False, do_predict=True, init_checkpoint=init,
                         bucket_by_length=bucketed, train_step=0))  # 0: no run to follow
    for phase in ("dev", "test"):
        assert re.search(rf"Predicting RACE {phase}: batches per padded length: \d+: \d+, \d+: ",
                         caplog.text), phase
    for name in ("eval_results.txt", "predict_results.txt"):
        padded, bucketed = (_key_value_lines(outputs[b] / name) for b in (False, True))
        assert [key for key, _ in bucketed] == [key for key, _ in padded]
        for (key, want), (_, got) in zip(padded, bucketed):
            if key in ("checkpoint", "best"):
                continue
            # Tight: the untrained head's logits differ by ~1e-3, the loss from ln 4 by ~1e-6.
            assert float(got) == pytest.approx(float(want), abs=1e-7), (name, key)
    assert (read_predictions(str(outputs[True] / "predictions.tsv"))
            == read_predictions(str(outputs[False] / "predictions.tsv")))
