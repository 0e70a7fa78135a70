"""A Hugging Face directory as `--init_checkpoint` of every fine-tuning script: config and
SentencePiece model from the directory, every encoder and head variable restored, a few
steps of training, and — with no training — HF's own predictions on the same examples."""

import os
import shutil

import numpy as np
import pytest

from albert_tf import cli
from albert_tf.checkpoints.hf_config import config_from_hf
from albert_tf.model_source import ModelSourceError, task_config, task_tokenizer
from albert_tf.glue import GlueProcessor, get_task
from albert_tf.glue.features import convert_examples_to_features
from albert_tf.glue.runner import GlueRunOptions
from albert_tf.glue.runner import run as run_glue
from albert_tf.race.runner import RaceRunOptions
from albert_tf.race.runner import run as run_race
from albert_tf.squad.runner import SquadRunOptions
from albert_tf.squad.runner import run as run_squad
from tests.checkpoints.hf_models import build, hf_config, torch
from tests.conftest import tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
GLUE_DIR = os.path.join(FIXTURES, "glue")


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory, text_assets):  # noqa: F811
    """HF classifier (2 labels), QA and multiple-choice directories with spiece.model."""
    config = hf_config(tiny_config(vocab_size=1000, max_position_embeddings=128))
    root = tmp_path_factory.mktemp("hf_models")
    out = {}
    for name in ("AlbertForSequenceClassification", "AlbertForQuestionAnswering",
                 "AlbertForMultipleChoice"):
        model = build(name, config, num_labels=2)
        model.save_pretrained(str(root / name))
        shutil.copyfile(text_assets.spm_model, root / name / "spiece.model")
        out[name] = (model, str(root / name))
    return out


def test_config_and_tokenizer_come_from_the_directory(hf_dirs, tmp_path):
    _, directory = hf_dirs["AlbertForSequenceClassification"]
    config = task_config(None, None, directory)
    assert config == config_from_hf(directory) and config.vocab_size == 1000
    assert task_tokenizer(None, None, True, None, directory).vocab_size == 1000
    same = tmp_path / "same.json"
    config.to_json_file(same)
    assert task_config(str(same), None, directory) == config
    other = tmp_path / "other.json"
    config.copy(num_hidden_layers=3, hidden_act="gelu_exact").to_json_file(other)
    with pytest.raises(ModelSourceError) as error:
        task_config(str(other), None, directory)
    assert str(error.value) == (
        f"--albert_config_file={other} and the config.json of --init_checkpoint={directory} "
        "disagree (num_hidden_layers: 3 vs 2; hidden_act: 'gelu_exact' vs 'gelu'); omit "
        "--albert_config_file to use the directory's")


def glue_options(directory, output_dir, **overrides):
    values = dict(data_dir=GLUE_DIR, task_name="MRPC", output_dir=str(output_dir),
                  init_checkpoint=directory, max_seq_length=32, train_batch_size=4,
                  eval_batch_size=3, predict_batch_size=2, learning_rate=1e-3, train_step=2,
                  save_checkpoints_steps=2, log_steps=1, seed=1)
    values.update(overrides)
    return GlueRunOptions(**values)


def test_run_classifier_predicts_what_hf_predicts(hf_dirs, tmp_path):
    hf_model, directory = hf_dirs["AlbertForSequenceClassification"]
    result = run_glue(glue_options(directory, tmp_path / "predict", do_predict=True))
    report = result.restore_report
    assert (report.kind, report.encoder_restored, report.encoder_total, report.head_restored,
            report.head_total) == ("Hugging Face", 25, 25, 2, 2)
    # The same examples through transformers: HF's class probabilities.
    tokenizer = task_tokenizer(None, None, True, None, directory)
    task = get_task("MRPC")
    processor = GlueProcessor(task, True, True)
    features = convert_examples_to_features(processor.get_test_examples(GLUE_DIR),
                                            processor.get_labels(), 32, tokenizer)
    with torch.no_grad():
        logits = hf_model(input_ids=torch.tensor([f.input_ids for f in features]),
                          attention_mask=torch.tensor([f.input_mask for f in features]),
                          token_type_ids=torch.tensor([f.segment_ids for f in features])).logits
    want = torch.softmax(logits.double(), -1).numpy()
    got = np.loadtxt(tmp_path / "predict" / "test_results.tsv", delimiter="\t")
    assert got.shape == want.shape == (3, 2) and np.abs(got - want).max() < 1e-5


def test_fine_tuning_parses_config_json_once_and_reads_the_safetensors_header_once(
        hf_dirs, tmp_path, monkeypatch):
    """run_classifier --init_checkpoint=<HF dir> --do_train fine-tunes from every encoder and
    head variable; config, tokenizer, pre-flight check and warm start share one parse of
    config.json and one read of the weights' header."""
    import builtins
    import collections

    from albert_tf.checkpoints import hf_files, hf_source

    _, directory = hf_dirs["AlbertForSequenceClassification"]
    config_file = os.path.join(directory, "config.json")
    counts = collections.Counter()
    real_open, real_read_header = builtins.open, hf_files.HFWeights._read_header

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) == config_file:
            counts["config.json"] += 1
        return real_open(file, *args, **kwargs)

    def counting_read_header(self, file):
        counts[os.path.basename(file)] += 1
        return real_read_header(self, file)

    monkeypatch.setattr(hf_source, "_cache", collections.OrderedDict())  # a fresh process
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(hf_files.HFWeights, "_read_header", counting_read_header)
    trained = run_glue(glue_options(directory, tmp_path / "train", do_train=True))
    assert trained.restore_report.encoder_restored == 25 and trained.restore_report.head_restored == 2
    assert np.isfinite(trained.train_logs["loss"])
    assert os.path.exists(tmp_path / "train" / "model.ckpt-2.index")
    assert counts == {"config.json": 1, "model.safetensors": 1}


def test_run_squad_v1_and_run_race_from_hf_directories(hf_dirs, tmp_path):
    _, qa = hf_dirs["AlbertForQuestionAnswering"]
    squad = run_squad(SquadRunOptions(
        albert_config_file=None, spm_model_file=None, init_checkpoint=qa,
        output_dir=str(tmp_path / "squad"), train_file=os.path.join(FIXTURES, "squad",
                                                                    "train-v1.1.json"),
        do_train=True, max_seq_length=64, doc_stride=32, max_query_length=16,
        train_batch_size=16, num_train_epochs=0.5, learning_rate=1e-3, seed=1, log_steps=1))
    # Encoder and qa_outputs; HF's QA file has no pooler, which the span model never reads.
    report = squad.restore_report
    assert (report.kind, report.encoder_restored, report.encoder_total, report.head_restored,
            report.head_total) == ("Hugging Face", 23, 25, 2, 2)
    assert report.missing == [] and report.unread_missing == ["albert.pooler.weight",
                                                              "albert.pooler.bias"]
    assert report.summary().endswith("; not in the checkpoint and never read by "
                                      "AlbertSpanLabeler: albert.pooler.weight, albert.pooler.bias")
    assert squad.num_train_steps >= 1 and np.isfinite(squad.train_logs["loss"])

    _, mc = hf_dirs["AlbertForMultipleChoice"]
    race = run_race(RaceRunOptions(
        data_dir=os.path.join(FIXTURES, "race"), output_dir=str(tmp_path / "race"),
        init_checkpoint=mc, max_seq_length=64, max_qa_length=16, train_batch_size=2,
        learning_rate=1e-3, train_step=2, warmup_step=1, save_checkpoints_steps=2, log_steps=1,
        do_eval=False, seed=1))
    report = race.restore_report
    assert (report.encoder_restored, report.encoder_total, report.head_restored) == (25, 25, 2)
    assert np.isfinite(race.train_logs["loss"])


def test_bad_directories_exit_1_with_one_line_and_write_nothing(hf_dirs, tmp_path, capsys):
    """As run_classifier.py's main: `<script>: error: <file>: …` on stderr, exit status 1."""
    _, directory = hf_dirs["AlbertForSequenceClassification"]
    corrupt = tmp_path / "corrupt"
    shutil.copytree(directory, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    no_config = tmp_path / "no_config"
    shutil.copytree(directory, no_config)
    os.remove(no_config / "config.json")
    for bad, message in (
            (corrupt, f"--init_checkpoint={corrupt}: {corrupt}/model.safetensors: not a "
                      "readable safetensors file"),
            (no_config, f"--init_checkpoint={no_config}: {no_config}/config.json: not found")):
        options = glue_options(str(bad), tmp_path / "out", do_train=True)
        with pytest.raises(SystemExit) as exit_info:
            cli.run_script("run_classifier", ["run_classifier.py"], lambda: run_glue(options))
        assert exit_info.value.code == 1
        stderr = capsys.readouterr().err
        assert stderr.count("\n") == 1 and stderr.startswith(f"run_classifier: error: {message}")
        assert not os.path.exists(tmp_path / "out")
