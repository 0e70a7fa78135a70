"""One entry point for every format: `load_checkpoint` / `validate_checkpoint` dispatch on the
kind and are equally strict; `validate_checkpoint` assigns nothing."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.models import AlbertClassifier, AlbertPretrainer
from albert_tf.checkpoints.ours import keyed_variables
from tests.checkpoints.model_garden_fixture import write_model_garden_pretrainer
from tests.checkpoints.tf1_hub_module import write_tf1_hub_module
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def classifier(config, classes=2):
    model = AlbertClassifier(config, classes)
    model({k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS})
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One pretrainer written in every format (a TF1 Hub module: `tf1_hub_module.py`)."""
    root = tmp_path_factory.mktemp("formats")
    config = tiny_config()
    source = AlbertPretrainer(config)
    source(random_inputs(config))
    paths = {
        "original": checkpoints.save_original_checkpoint(source, str(root / "orig" / "model.ckpt")),
        "ours": tf.train.Checkpoint(model=keyed_variables(source.variables)).write(
            str(root / "ours" / "ckpt")),
        "hf": checkpoints.save_hf_checkpoint(source, str(root / "hf")),
    }
    paths["tf1_hub"] = write_tf1_hub_module(str(root / "hub"), config, paths["original"])
    # Our writer (test_keras_hub.py checks it against keras-hub's own from_preset).
    paths["keras_hub"] = checkpoints.save_keras_hub_preset(source, str(root / "keras_hub"))
    (root / "spm.model").write_bytes(b"sentencepiece model bytes")  # an asset, never read here
    paths["model_garden"], paths["model_garden_checkpoint"] = write_model_garden_pretrainer(
        str(root), config, paths["original"], str(root / "spm.model"))
    return source, paths


@pytest.mark.parametrize("kind", checkpoints.KINDS)
def test_every_kind_loads_the_encoder_and_names_the_absent_head(saved, kind):
    source, paths = saved
    path = paths[kind]
    assert checkpoints.checkpoint_kind(path) == kind
    model = classifier(source.config)
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(checkpoints.CheckpointMismatchError) as error:
        checkpoints.validate_checkpoint(model, path)
    head = {"original": "output_weights", "ours": "classifier_head/output_weights",
            "hf": "classifier.weight", "tf1_hub": "output_weights",
            "model_garden": "output_weights", "model_garden_checkpoint": "output_weights",
            "keras_hub": "logits/0"}[kind]
    assert f"missing from the checkpoint (2): {head}" in str(error.value)
    report = checkpoints.validate_checkpoint(model, path, allow_missing=["classifier_head"])
    assert report.kind == kind and len(report.restored) == 25
    for weight, value in zip(model.weights, before):  # a dry run assigns nothing
        np.testing.assert_array_equal(weight.numpy(), value)
    assert checkpoints.warm_start(model, path, ["classifier_head"]).encoder_restored == 25
    np.testing.assert_array_equal(model.encoder.pooler.dense.kernel.numpy(),
                                  source.encoder.pooler.dense.kernel.numpy())
    assert sorted(report.unused) == sorted(
        n for n in checkpoints.named_variables(source, kind)
        if n not in checkpoints.named_variables(model, kind)  # the pretraining heads
        and not (kind.startswith("model_garden") and "seq_relationship" in n))  # MG: no SOP


def test_another_vocabulary_is_refused_in_every_kind(saved):
    _, paths = saved
    model = AlbertPretrainer(tiny_config(vocab_size=120))
    model(random_inputs(model.config))
    for path in paths.values():
        with pytest.raises(checkpoints.CheckpointMismatchError,
                           match=r"(word|token)_embeddings?\S*: checkpoint \[100, 16\] vs "
                                 r"model \[120, 16\]"):
            checkpoints.load_checkpoint(model, path)
