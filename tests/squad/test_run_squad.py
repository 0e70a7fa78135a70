"""End to end on a tiny model: train a few steps, predict, evaluate (v1.1 and v2.0); bad input."""

import json
import logging
import os

import pytest

from albert_tf import AlbertConfig, checkpoints
from albert_tf.models import AlbertPretrainer
from albert_tf.squad.metrics import evaluate_v1, evaluate_v2
from albert_tf.squad.examples import SquadDataError, read_squad_file
from albert_tf.squad.runner import SquadRunOptions, run
from tests.in_process_tools import run_tool
from tests.squad.conftest import fixture_path
from tests.squad.reference import (assert_matches_reference, reference_options,
                                   seeded_init_checkpoint, tiny_config)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NBEST_KEYS = ["text", "probability", "start_log_prob", "end_log_prob"]


@pytest.fixture(scope="module")
def config_file(tmp_path_factory, tokenizer):
    config = tiny_config(tokenizer.vocab_size)
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    config.to_json_file(path)
    return path


def _options(config_file, spm_model, output_dir, v2, **overrides):
    return SquadRunOptions(**reference_options(config_file, spm_model, output_dir, v2,
                                               **overrides))


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _eval_results(output_dir):
    lines = open(os.path.join(output_dir, "eval_results.txt")).read().splitlines()
    return dict(line.split(" = ", 1) for line in lines if " = " in line)


def _check_official_formats(output_dir, data, n_best_size=20):
    predictions = _json(os.path.join(output_dir, "predictions.json"))
    nbest = _json(os.path.join(output_dir, "nbest_predictions.json"))
    ids = [qa["id"] for article in data for p in article["paragraphs"] for qa in p["qas"]]
    assert sorted(predictions) == sorted(ids) == sorted(nbest)
    assert all(isinstance(text, str) for text in predictions.values())
    for entries in nbest.values():
        assert 1 <= len(entries) <= n_best_size
        assert all(list(e) == NBEST_KEYS for e in entries)
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0, abs=1e-6)
    return predictions, nbest


def test_v1_end_to_end(config_file, spm_model, tmp_path, caplog):
    # Warm start from an original-format pretraining checkpoint (no SQuAD head in it).
    init = seeded_init_checkpoint(config_file, str(tmp_path / "init"))
    with caplog.at_level(logging.INFO, logger="absl"):
        result = run(_options(config_file, spm_model, tmp_path / "out", v2=False,
                              init_checkpoint=init))
    pretrainer = AlbertPretrainer(AlbertConfig.from_json_file(config_file))
    encoder_names = [n for n in checkpoints.variable_map(pretrainer) if n.startswith("bert/")]
    report = result.restore_report
    assert (report.encoder_restored, report.encoder_total) == (len(encoder_names),) * 2
    assert (report.head_restored, report.head_total, report.heads) == (0, 2, ("squad_v1_head",))
    # The warm-start line every task logs, and prediction's progress.
    assert (f"restored {len(encoder_names)}/{len(encoder_names)} encoder variables and 0/2 "
            "squad-v1-head variables from original TF1 checkpoint") in caplog.text
    assert "Predicting SQuAD features: 388 examples in" in caplog.text  # 45 questions' windows
    tmp_path = tmp_path / "out"
    assert_matches_reference("v1", tmp_path)
    assert result.num_train_steps == 5  # int(45 examples / 8 · 1 epoch)
    data = read_squad_file(fixture_path("dev-v1.1.json"))["data"]
    predictions, nbest = _check_official_formats(tmp_path, data)
    assert not os.path.exists(tmp_path / "null_odds.json")
    for qas_id, text in predictions.items():
        assert text == nbest[qas_id][0]["text"]
    # The reported metrics are the official v1.1 ones of the written file.
    assert result.best_results["f1"] == pytest.approx(evaluate_v1(data, predictions)["f1"])
    written = _eval_results(tmp_path)
    assert float(written["exact_match"]) == pytest.approx(result.best_results["exact_match"])
    assert written["global_step"] == "5"
    for name in ("train.tf_record", "eval.tf_record", "eval_features.pkl", "model.ckpt-best.index"):
        assert os.path.exists(tmp_path / name), name


def test_v2_end_to_end_then_predict_only(config_file, spm_model, tmp_path, caplog):
    init = seeded_init_checkpoint(config_file, str(tmp_path / "init"))
    result = run(_options(config_file, spm_model, tmp_path, v2=True, init_checkpoint=init))
    assert_matches_reference("v2", tmp_path)
    assert result.num_train_steps == 7  # int(56 / 8)
    data = read_squad_file(fixture_path("dev-v2.0.json"))["data"]
    predictions, nbest = _check_official_formats(tmp_path, data)
    null_odds = _json(tmp_path / "null_odds.json")
    assert sorted(null_odds) == sorted(predictions)
    assert all(isinstance(v, float) for v in null_odds.values())
    reported = result.eval_results[-1]
    threshold = reported["null_score_diff_threshold"]
    for qas_id, text in predictions.items():  # Q24: answer only when null score < threshold
        assert text == (nbest[qas_id][0]["text"] if null_odds[qas_id] < threshold else "")
    # What the official v2.0 script computes from the three files.
    official = evaluate_v2(data, predictions, null_odds)
    for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh",
                "best_f1", "best_f1_thresh"):
        assert reported[key] == pytest.approx(official[key]), key
    assert reported["HasAns_total"] == 45 and reported["NoAns_total"] == 11

    # Length-bucketed prediction of the same checkpoint: the same files and scores.
    with caplog.at_level(logging.INFO, logger="absl"):
        run(_options(config_file, spm_model, tmp_path, v2=True, do_train=False,
                     bucket_by_length=True))
    assert "Predicting SQuAD features: batches per padded length: " in caplog.text
    assert_matches_reference("v2", tmp_path)

    # Predict only (Q23 fixed: train_file is never read): caches and the best checkpoint
    # are reused, the inclusive threshold rule is honoured.
    again = run(_options(config_file, spm_model, tmp_path, v2=True, do_train=False,
                         train_file=str(tmp_path / "absent.json"), null_threshold_rule="inclusive"))
    assert again.num_train_steps == 0 and again.eval_results[-1]["global_step"] == 7
    inclusive = _json(tmp_path / "predictions.json")
    for qas_id, text in inclusive.items():
        assert text == (nbest[qas_id][0]["text"] if null_odds[qas_id] <= threshold else "")


def test_bad_training_answers_are_skipped_and_listed(config_file, spm_model, tmp_path):
    options = _options(config_file, spm_model, tmp_path, v2=False, do_predict=False,
                       train_file=fixture_path("bad_answer_start.json"), train_batch_size=1,
                       max_seq_length=32, doc_stride=8, max_query_length=8)
    result = run(options)
    assert result.num_train_steps == 1 and result.skips.total == 1
    assert result.skips.summary_lines()[0].startswith("skipped 1 question(s): answer_start")


@pytest.mark.parametrize("name, v2, message", [
    ("dev-v2.0.json", False, "this is a SQuAD 2.0 file"),
    ("malformed.json", False, "not valid JSON"),
])
def test_bad_input_stops_before_writing_anything(config_file, spm_model, tmp_path, name, v2, message):
    options = _options(config_file, spm_model, tmp_path / "out", v2, do_train=False,
                       predict_file=fixture_path(name))
    with pytest.raises(SquadDataError, match=message):
        run(options)
    assert not os.path.exists(tmp_path / "out")  # no feature cache, no partial output


def test_cli_reports_bad_input_in_one_line(config_file, spm_model, tmp_path):
    """run_squad's command line in this process (absl parses it, `cli.run_script` reports
    errors, as `python run_squad.py` does; `python run_x.py` as a process: tests/test_script_flags.py)."""
    completed = run_tool(
        "albert_tf.run_squad", f"--albert_config_file={config_file}",
        f"--spm_model_file={spm_model}", f"--output_dir={tmp_path}", "--do_predict",
        "--max_seq_length=96", f"--predict_file={fixture_path('dev-v2.0.json')}")
    assert completed.status == 1
    lines = completed.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("run_squad")] == lines[-1:] == [f"run_squad: error: {fixture_path('dev-v2.0.json')}: this is a SQuAD 2.0 "
                      "file (\"version\": \"v2.0\"); pass --version_2_with_negative to use it"]
    assert "Traceback" not in completed.stderr and os.listdir(tmp_path) == []


def test_v1_fine_tunes_an_encoder_export(config_file, spm_model, tmp_path, caplog):
    """--albert_hub_module_handle: config and tokenizer come from the export, its variables train."""
    from albert_tf.export.tfhub import export_encoder

    config = AlbertConfig.from_json_file(config_file)
    pretrainer = AlbertPretrainer(config)
    init = checkpoints.save_original_checkpoint(pretrainer, str(tmp_path / "init" / "model.ckpt"))
    handle = export_encoder(config, init, str(tmp_path / "export"), spm_model, True, False)
    options = _options(None, None, tmp_path / "out", v2=False, albert_hub_module_handle=handle)
    with caplog.at_level(logging.INFO, logger="absl"):
        result = run(options)
    assert "encoder variables from the export" in caplog.text
    assert "random initialisation" not in caplog.text  # the export's weights are no random start
    assert result.num_train_steps == 5
    data = read_squad_file(fixture_path("dev-v1.1.json"))["data"]
    _check_official_formats(tmp_path / "out", data)
    assert "f1" in _eval_results(tmp_path / "out")
