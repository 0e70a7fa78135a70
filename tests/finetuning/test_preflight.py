"""Bad input stops a fine-tuning run before any feature cache, model or checkpoint exists:
a vocabulary larger than the config's vocab_size (one line naming both files) in all three
scripts, and a SQuAD training answer outside its context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from albert_tf.config import AlbertConfig
from albert_tf.finetuning.preflight import PreflightError, check_vocab_fits
from albert_tf.glue.runner import GlueRunOptions, run as run_glue
from albert_tf.race.runner import RaceRunOptions, run as run_race
from albert_tf.squad.examples import SquadDataError
from albert_tf.squad.runner import SquadRunOptions, run as run_squad
from albert_tf.tokenization import FullTokenizer
from tests.conftest import tiny_config
from tests.glue.conftest import FIXTURES as GLUE_DIR
from tests.race.conftest import fixture_dir as race_dir
from tests.squad.conftest import fixture_path as squad_fixture
from tests.training.processes import RUNTIME_PYTHONPATH

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def small_vocab_config(tmp_path_factory) -> str:
    """A tiny model with vocab_size 100, for the 1000-piece SentencePiece model."""
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    tiny_config(vocab_size=100, max_position_embeddings=64).to_json_file(path)
    return path


def expected_message(spm_model: str, config_file: str) -> str:
    return (f"--spm_model_file={spm_model} has 1000 pieces but vocab_size is 100 in "
            f"--albert_config_file={config_file}: ids >= 100 would index past the embedding "
            f"table; use the config and vocabulary of one model")


def test_glue_run_stops_before_writing(small_vocab_config, text_assets, tmp_path):
    out = tmp_path / "out"
    options = GlueRunOptions(data_dir=GLUE_DIR, task_name="mrpc", output_dir=str(out),
                             albert_config_file=small_vocab_config,
                             spm_model_file=text_assets.spm_model, max_seq_length=32,
                             do_train=True, do_eval=True, train_step=2)
    with pytest.raises(PreflightError) as error:
        run_glue(options)
    assert str(error.value) == expected_message(text_assets.spm_model, small_vocab_config)
    assert not out.exists()


def test_race_run_stops_before_writing(small_vocab_config, text_assets, tmp_path):
    out = tmp_path / "out"
    options = RaceRunOptions(data_dir=race_dir(), output_dir=str(out),
                             albert_config_file=small_vocab_config,
                             spm_model_file=text_assets.spm_model, max_seq_length=64,
                             max_qa_length=16, do_train=True, do_eval=True, train_step=2)
    with pytest.raises(PreflightError, match="has 1000 pieces but vocab_size is 100"):
        run_race(options)
    assert not out.exists()


def test_squad_run_stops_before_writing(small_vocab_config, text_assets, tmp_path):
    out = tmp_path / "out"
    options = SquadRunOptions(albert_config_file=small_vocab_config,
                              spm_model_file=text_assets.spm_model, output_dir=str(out),
                              train_file=squad_fixture("train-v1.1.json"), do_train=True,
                              max_seq_length=64, doc_stride=32, max_query_length=16)
    with pytest.raises(PreflightError, match="has 1000 pieces but vocab_size is 100"):
        run_squad(options)
    assert not out.exists()


def test_squad_answer_outside_its_context_stops_before_writing(text_assets, tmp_path):
    """Corrupt training data (faithfulness §9.3): the run ends before any feature cache."""
    data = json.loads(open(squad_fixture("train-v1.1.json"), encoding="utf-8").read())
    qa = data["data"][0]["paragraphs"][0]["qas"][0]
    context = data["data"][0]["paragraphs"][0]["context"]
    qa["answers"][0]["answer_start"] = len(context) - 2
    train_file = tmp_path / "train.json"
    train_file.write_text(json.dumps(data), encoding="utf-8")
    config = str(tmp_path / "albert_config.json")
    tiny_config(vocab_size=1000, max_position_embeddings=64).to_json_file(config)
    out = tmp_path / "out"
    options = SquadRunOptions(albert_config_file=config, spm_model_file=text_assets.spm_model,
                              output_dir=str(out), train_file=str(train_file), do_train=True,
                              max_seq_length=64, doc_stride=32, max_query_length=16)
    with pytest.raises(SquadDataError, match=rf"question '{qa['id']}': answer span"):
        run_squad(options)
    assert not out.exists()


def test_run_classifier_prints_one_line_and_exits_1(small_vocab_config, text_assets, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = subprocess.run(
        [sys.executable, "run_classifier.py", "--task_name=MRPC", f"--data_dir={GLUE_DIR}",
         f"--output_dir={out}", f"--cached_dir={cache}", f"--albert_config_file={small_vocab_config}",
         f"--spm_model_file={text_assets.spm_model}", "--max_seq_length=32", "--do_train"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=RUNTIME_PYTHONPATH), capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "run_classifier: error: " + expected_message(text_assets.spm_model, small_vocab_config))
    assert "Traceback" not in result.stderr
    assert not out.exists() and not cache.exists()


def test_equal_or_smaller_vocabularies_fit(text_assets):
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    options = SimpleNamespace(albert_config_file="c.json", spm_model_file="m.model")
    check_vocab_fits(AlbertConfig(vocab_size=1000), tokenizer, options)
    check_vocab_fits(AlbertConfig(vocab_size=30000), tokenizer, options)


def test_sources_named_for_an_export_and_wordpiece(text_assets, tmp_path):
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    export = SimpleNamespace(albert_hub_module_handle="exports/enc", albert_config_file=None,
                             spm_model_file=None, vocab_file=None)
    with pytest.raises(PreflightError) as error:
        check_vocab_fits(AlbertConfig(vocab_size=10), tokenizer, export)
    assert str(error.value).startswith(
        "the SentencePiece model of --albert_hub_module_handle=exports/enc has 1000 pieces but "
        "vocab_size is 10 in the config of --albert_hub_module_handle=exports/enc")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
    wordpiece = FullTokenizer(vocab_file=str(vocab))
    options = SimpleNamespace(albert_config_file="c.json", spm_model_file=None,
                              vocab_file=str(vocab))
    with pytest.raises(PreflightError, match=rf"--vocab_file={vocab} has 7 pieces"):
        check_vocab_fits(AlbertConfig(vocab_size=5), wordpiece, options)


# ----- --init_checkpoint: checked against the model before any cache or output exists -----
@pytest.fixture(scope="module")
def bad_checkpoints(tmp_path_factory) -> dict[str, str]:
    """--init_checkpoint values that do not fit the tiny 1000-piece model of `config_file`:
    a path that does not exist, an original checkpoint of another size (H = 48), and HF
    directories with a head the task cannot take (a 3-label classifier; a QA model)."""
    from albert_tf import checkpoints
    from albert_tf.models import AlbertClassifier, AlbertPretrainer, AlbertSpanLabeler
    from tests.conftest import random_inputs

    root = tmp_path_factory.mktemp("bad_checkpoints")
    wide = tiny_config(vocab_size=1000, max_position_embeddings=128, hidden_size=48,
                       intermediate_size=96)
    pretrainer = AlbertPretrainer(wide)
    pretrainer(random_inputs(wide))
    same = tiny_config(vocab_size=1000, max_position_embeddings=128)
    encoder_inputs = {k: v for k, v in random_inputs(same).items() if k != "masked_lm_positions"}
    classifier, span_labeler = AlbertClassifier(same, 3), AlbertSpanLabeler(same)
    classifier(encoder_inputs)
    span_labeler(encoder_inputs)
    return {
        "missing": str(root / "no_such_checkpoint"),
        "other_size": checkpoints.save_original_checkpoint(pretrainer,
                                                           str(root / "wide" / "model.ckpt")),
        "hf_3_labels": checkpoints.save_hf_checkpoint(classifier, str(root / "hf_classifier")),
        "hf_qa": checkpoints.save_hf_checkpoint(span_labeler, str(root / "hf_qa")),
    }


# What each script's one line must name besides the flag and the path (tiny model: H = 32).
OTHER_SIZE = "bert/pooler/dense/kernel: checkpoint [48, 48] vs model [32, 32]"
CHECKPOINT_CASES = {
    "run_classifier": {"missing": "no checkpoint here", "other_size": OTHER_SIZE,
                       "hf_3_labels": "classifier.weight: checkpoint [3, 32] vs model [2, 32]"},
    "run_race": {"missing": "no checkpoint here", "other_size": OTHER_SIZE,
                 "hf_qa": "HF AlbertForQuestionAnswering files have no pooler, which "
                          "AlbertMultipleChoice reads"},
    "run_squad": {"missing": "no checkpoint here", "other_size": OTHER_SIZE,
                  "hf_qa": "the SQuAD 2.0 head (start, conditioned end and answer-class "
                           "logits) has no Hugging Face equivalent"},
}


def task_run(script: str, config_file: str, spm_model: str, init_checkpoint: str, root):
    """() → the script's run with --init_checkpoint, training and evaluation asked for."""
    common = dict(albert_config_file=config_file, spm_model_file=spm_model,
                  init_checkpoint=init_checkpoint, output_dir=str(root / "out"), do_train=True)
    if script == "run_classifier":
        options = GlueRunOptions(data_dir=GLUE_DIR, task_name="mrpc", cached_dir=str(root / "cache"),
                                 max_seq_length=32, do_eval=True, do_predict=True, train_step=2,
                                 **common)
        return lambda: run_glue(options)
    if script == "run_race":
        options = RaceRunOptions(data_dir=race_dir(), max_seq_length=64, max_qa_length=16,
                                 do_eval=True, train_step=2, **common)
        return lambda: run_race(options)
    options = SquadRunOptions(train_file=squad_fixture("train-v2.0.json"),
                              predict_file=squad_fixture("dev-v2.0.json"), do_predict=True,
                              version_2_with_negative=True, max_seq_length=64, doc_stride=32,
                              max_query_length=16, **common)
    return lambda: run_squad(options)


@pytest.mark.parametrize("script,case", [(s, c) for s, cases in CHECKPOINT_CASES.items()
                                         for c in cases])
def test_init_checkpoint_that_does_not_fit_stops_before_any_cache(
        script, case, bad_checkpoints, config_file, spm_model, tmp_path, capsys):
    """As the script's main: one line `<script>: error: --init_checkpoint=<path>: …` naming
    what mismatches, exit status 1, and neither output_dir nor a feature cache written."""
    from albert_tf import cli

    path = bad_checkpoints[case]
    run = task_run(script, config_file, spm_model, path, tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.run_script(script, [script], run)
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"{script}: error: --init_checkpoint={path}: "), stderr
    assert CHECKPOINT_CASES[script][case] in stderr, stderr
    assert os.listdir(tmp_path) == []  # no output_dir, no cached_dir


@pytest.mark.parametrize("case,expected", [
    ("missing", "no checkpoint here"),
    ("other_size", OTHER_SIZE),
    ("hf_3_labels", "model variables missing from the checkpoint (7): predictions.dense.weight"),
])
def test_pretraining_init_checkpoint_is_checked_from_names_and_shapes(case, expected,
                                                                       bad_checkpoints):
    from albert_tf.pretraining.runner import (
        check_init_checkpoint as check_pretraining_init_checkpoint)

    path = bad_checkpoints[case]
    options = SimpleNamespace(init_checkpoint=path, init_from_group0=False)
    with pytest.raises(PreflightError) as error:
        check_pretraining_init_checkpoint(tiny_config(vocab_size=1000,
                                                      max_position_embeddings=128), options)
    assert str(error.value).startswith(f"--init_checkpoint={path}: ")
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_fitting_checkpoints_pass_and_the_model_is_built_without_weights(bad_checkpoints):
    """The model is built in a throwaway graph (no variable gets a value); a classifier fits
    the pretrainer's checkpoint, a 2-group pretrainer only with init_from_group0."""
    import tensorflow as tf

    from albert_tf.checkpoints import head_parts, warm_start
    from albert_tf.finetuning.preflight import check_init_checkpoint
    from albert_tf.pretraining.runner import (
        check_init_checkpoint as check_pretraining_init_checkpoint)
    from albert_tf.models import AlbertClassifier

    config = tiny_config(vocab_size=1000, max_position_embeddings=128, hidden_size=48,
                         intermediate_size=96)
    options = SimpleNamespace(init_checkpoint=bad_checkpoints["other_size"],
                              init_from_group0=False)
    grouped = config.copy(num_hidden_groups=2)
    with pytest.raises(PreflightError, match="missing from the checkpoint"):
        check_pretraining_init_checkpoint(grouped, options)
    options.init_from_group0 = True
    check_pretraining_init_checkpoint(grouped, options)

    built_eagerly = []

    def build():
        built_eagerly.append(tf.executing_eagerly())
        return AlbertClassifier(config, 2)

    reports = []
    check_init_checkpoint(build, options, check=lambda m, p: reports.append(
        warm_start(m, p, head_parts(m), dry_run=True)))
    assert built_eagerly == [False] and tf.executing_eagerly()
    assert (reports[0].encoder_restored, reports[0].encoder_total) == (25, 25)
