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
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

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
        cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True,
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
