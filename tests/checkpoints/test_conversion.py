"""Format conversion: round trips are bit-identical in every tensor; the CLIs (convert and the
original's export_checkpoints on a released-tarball layout) print what they read."""

import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from albert_tf import AlbertConfig, checkpoints
from albert_tf.checkpoints.hf_config import config_from_hf
from albert_tf.checkpoints.conversion import (convert_checkpoint, detect_head,
                                              export_model_checkpoint)
from albert_tf.models import AlbertClassifier, AlbertPretrainer
from tests.checkpoints.hf_models import build, hf_config
from tests.conftest import random_inputs, tiny_config
from tests.training import processes


def tf1_tensors(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def assert_identical(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]), name


@pytest.fixture(scope="module")
def original_dir(tmp_path_factory):
    """A released-tarball layout: albert_config.json, model.ckpt-best.*, 30k-clean.model."""
    root = tmp_path_factory.mktemp("albert_tiny")
    config = tiny_config(num_hidden_layers=3, num_hidden_groups=2, inner_group_num=2)
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    checkpoints.save_original_checkpoint(model, str(root / "model.ckpt-best"), global_step=7)
    os.remove(root / "checkpoint")  # the tarballs have no state file
    config.to_json_file(root / "albert_config.json")
    (root / "30k-clean.model").write_bytes(b"sentencepiece model bytes")
    return root


def test_original_to_hf_to_original_is_bit_identical(original_dir, tmp_path):
    prefix = str(original_dir / "model.ckpt-best")
    to_hf = convert_checkpoint(prefix, str(tmp_path / "hf"), "hf")
    assert (to_hf.source_kind, to_hf.head) == ("original", "pretraining")
    assert to_hf.report.skipped == ["global_step"]
    back = convert_checkpoint(str(tmp_path / "hf"), str(tmp_path / "original"), "original")
    assert back.head == "pretraining"
    source = tf1_tensors(prefix)
    del source["global_step"]  # a step is not a weight; convert writes weights only
    assert_identical(source, tf1_tensors(str(tmp_path / "original" / "model.ckpt")))
    assert AlbertConfig.from_json_file(tmp_path / "original" / "albert_config.json") == \
        AlbertConfig.from_json_file(original_dir / "albert_config.json")


def test_hf_to_keras_to_hf_is_bit_identical(tmp_path):
    """A transformers-saved sequence classifier at E = H (its projection is real weights)."""
    model = build("AlbertForSequenceClassification", hf_config(tiny_config(embedding_size=32)))
    model.save_pretrained(str(tmp_path / "hf"))
    (tmp_path / "hf" / "spiece.model").write_bytes(b"spm")
    assert detect_head(str(tmp_path / "hf")) == ("classification", 3)
    keras_out = convert_checkpoint(str(tmp_path / "hf"), str(tmp_path / "keras"), "keras")
    assert checkpoints.checkpoint_kind(str(tmp_path / "keras")) == "ours"
    assert (tmp_path / "keras" / "30k-clean.model").read_bytes() == b"spm"
    assert keras_out.written == len(keras_out.report.restored)
    back = convert_checkpoint(str(tmp_path / "keras"), str(tmp_path / "hf2"), "hf",
                              spm_model_file=str(tmp_path / "keras" / "30k-clean.model"))
    assert back.head == "classification"
    assert_identical(load_file(str(tmp_path / "hf" / "model.safetensors")),
                     load_file(str(tmp_path / "hf2" / "model.safetensors")))
    assert (tmp_path / "hf2" / "spiece.model").read_bytes() == b"spm"


def test_a_conversion_never_invents_weights(tmp_path):
    """A masked-LM file (no pooler, no SOP) converts to an original checkpoint without them;
    asking for the pretraining model from it is refused by the strict load."""
    build("AlbertForMaskedLM", hf_config(tiny_config())).save_pretrained(str(tmp_path / "mlm"))
    result = convert_checkpoint(str(tmp_path / "mlm"), str(tmp_path / "original"), "original")
    names = tf1_tensors(str(tmp_path / "original" / "model.ckpt"))
    assert result.head == "masked_lm" and not [n for n in names if "pooler" in n or "seq_rel" in n]
    assert "cls/predictions/output_bias" in names
    with pytest.raises(checkpoints.CheckpointMismatchError,
                       match=r"missing from the checkpoint \(4\): bert/pooler/dense/kernel"):
        convert_checkpoint(str(tmp_path / "original"), str(tmp_path / "pt"), "hf",
                           head="pretraining")
    assert not os.path.exists(tmp_path / "pt")


def test_export_checkpoints_on_a_released_tarball_layout(original_dir, tmp_path):
    path = export_model_checkpoint(str(original_dir), "model.ckpt-best",
                                   str(tmp_path / "export" / "model.ckpt"))
    written = tf1_tensors(path)
    source = tf1_tensors(str(original_dir / "model.ckpt-best"))
    assert written.pop("global_step") == 0 and source.pop("global_step") == 7  # §11.3
    assert_identical(source, written)


def test_command_lines(original_dir, tmp_path):
    """`python -m albert_tf.convert` and the original's export_checkpoints flags; the
    latter says each thing once, in its log (issue 28: it printed each line a second time)."""
    result = processes.run(["-m", "albert_tf.export_checkpoints",
                            f"--albert_directory={original_dir}", "--checkpoint_name=model.ckpt-best",
                            "--do_lower_case", f"--export_path={tmp_path}/export/model.ckpt"])
    assert result.returncode == 0, result.stderr[-2000:]
    weights = len(tf1_tensors(str(original_dir / "model.ckpt-best"))) - 1  # not global_step
    assert result.stdout == ""
    for line in (f"restored {weights} variables from {original_dir}/model.ckpt-best",
                 f"Wrote original-format checkpoint {tmp_path}/export/model.ckpt "
                 f"({weights + 1} variables)"):
        assert result.stderr.count(line) == 1, (line, result.stderr[-3000:])
    result = processes.run(["-m", "albert_tf.convert", f"--input={tmp_path}/export",
                            f"--albert_config_file={original_dir}/albert_config.json",
                            f"--output={tmp_path}/hf", "--to=hf"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "original (pretraining) → hf" in result.stdout
    assert f"restored 80 variables from {tmp_path}/export/model.ckpt" in result.stdout
    classifier = AlbertClassifier(config_from_hf(tmp_path / "hf"), 2)
    classifier({k: v for k, v in random_inputs(classifier.config).items()
                if k != "masked_lm_positions"})
    report = checkpoints.load_checkpoint(classifier, str(tmp_path / "hf"),
                                         allow_missing=["classifier_head"])
    assert report.kind == "hf" and len(report.restored) == len(classifier.encoder.weights)


def test_convert_logs_the_output_directory_not_its_staging_one(original_dir, tmp_path, caplog):
    """Issue 28: `convert --to=hf` logged `Wrote Hugging Face … to …/.hf.<hex>.tmp`; the line
    names the directory the files are in, with the count of tensors the file holds."""
    import logging

    output = tmp_path / "hf"
    with caplog.at_level(logging.INFO, logger="absl"):
        convert_checkpoint(str(original_dir / "model.ckpt-best"), str(output), "hf")
    tensors = len(load_file(str(output / "model.safetensors")))
    assert (f"Wrote Hugging Face AlbertForPreTraining to {output} ({tensors} tensors)"
            in caplog.text)
    assert ".tmp" not in caplog.text
