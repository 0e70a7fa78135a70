"""Encoder export: every loader gives the Keras model's outputs, gradients flow, CLI works."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.checkpoints.encoder_exports import HubEncoder
from albert_tf.export.tfhub import ExportError, export_encoder
from albert_tf.models import AlbertClassifier, AlbertPretrainer
from tests.conftest import random_inputs, tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def exported(tmp_path_factory, text_assets):  # noqa: F811
    """A tiny pretrainer with dropout, saved as an original checkpoint, exported with MLM."""
    config = tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                         vocab_size=1000)
    pretrainer = AlbertPretrainer(config)
    root = tmp_path_factory.mktemp("export")
    checkpoint = checkpoints.save_original_checkpoint(pretrainer, str(root / "ckpt" / "model.ckpt"))
    path = export_encoder(config, checkpoint, str(root / "encoder"), text_assets.spm_model,
                          do_lower_case=True, with_mlm=True)
    inputs = random_inputs(config, batch=3, seq=12)
    return path, pretrainer, inputs


def max_diff(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def test_saved_model_load_and_hub_load_match_the_keras_model(exported):
    import tensorflow_hub as hub

    path, pretrainer, inputs = exported
    feed = {k: tf.constant(inputs[k]) for k in ENCODER_KEYS}
    want = pretrainer.encoder(feed)
    for loaded in (tf.saved_model.load(path), hub.load(path)):
        got = loaded(feed, training=False)
        for key in ("pooled_output", "sequence_output"):
            assert max_diff(got[key], want[key]) < TOLERANCE
        assert len(got["encoder_outputs"]) == 2
        assert max_diff(got["default"], want["pooled_output"]) < TOLERANCE
        mlm = loaded.mlm({**feed, "masked_lm_positions": tf.constant(inputs["masked_lm_positions"])})
        assert max_diff(mlm["mlm_logits"], pretrainer(inputs)["mlm_logits"]) < TOLERANCE
    loaded = tf.saved_model.load(path)
    assert len(loaded.trainable_variables) == len(pretrainer.encoder.trainable_variables)
    assert loaded.regularization_losses == [] or len(loaded.regularization_losses) == 0
    assert os.path.basename(loaded.sp_model_file.asset_path.numpy().decode()) == "spm_1000.model"
    assert bool(loaded.do_lower_case.numpy())
    # training=True runs the dropout graph.
    train_a, train_b = loaded(feed, training=True), loaded(feed, training=True)
    assert max_diff(train_a["pooled_output"], train_b["pooled_output"]) > 1e-4


def test_gradient_step_through_the_loaded_export_lowers_a_loss(exported):
    path, _, inputs = exported
    loaded = tf.saved_model.load(path)
    feed = {k: tf.constant(inputs[k]) for k in ENCODER_KEYS}
    target = tf.zeros([3, 32])
    before = [v.numpy().copy() for v in loaded.trainable_variables]
    optimizer = keras.optimizers.SGD(0.1)

    def loss():
        return tf.reduce_mean(tf.square(loaded(feed, training=False)["pooled_output"] - target))

    first = float(loss())
    for _ in range(3):
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, loaded.trainable_variables)
        assert all(g is not None for g in grads)
        optimizer.apply_gradients(zip(grads, loaded.trainable_variables))
    assert float(loss()) < first
    assert any(np.abs(v.numpy() - b).max() > 0 for v, b in zip(loaded.trainable_variables, before))


@pytest.mark.parametrize("wrapper", ["TFSMLayer", "HubEncoder"])
def test_keras3_wrappers_match_and_train(exported, wrapper):
    path, pretrainer, inputs = exported
    feed = {k: tf.constant(inputs[k]) for k in ENCODER_KEYS}
    if wrapper == "TFSMLayer":
        layer = keras.layers.TFSMLayer(path, call_endpoint="call_inference",
                                       call_training_endpoint="call_training", trainable=True)
    else:
        layer = HubEncoder(path)
    got = layer(feed)
    assert max_diff(got["pooled_output"], pretrainer.encoder(feed)["pooled_output"]) < TOLERANCE
    assert len(layer.trainable_weights) == len(pretrainer.encoder.trainable_variables)
    before = [w.numpy().copy() for w in layer.trainable_weights]
    optimizer = keras.optimizers.SGD(0.1)

    def loss():
        return tf.reduce_mean(tf.square(layer(feed, training=False)["pooled_output"]))

    first = float(loss())
    for _ in range(3):
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, layer.trainable_weights)
        optimizer.apply_gradients(zip(grads, layer.trainable_weights))
    assert float(loss()) < first
    assert any(np.abs(w.numpy() - b).max() > 0 for w, b in zip(layer.trainable_weights, before))


def test_hub_encoder_inside_a_task_model(exported):
    path, pretrainer, inputs = exported
    encoder = HubEncoder(path)
    model = AlbertClassifier(encoder.config, num_classes=2, encoder=encoder)
    feed = {k: inputs[k] for k in ENCODER_KEYS}
    logits = model(feed)["logits"]
    pooled = pretrainer.encoder(feed)["pooled_output"]
    head = model.classifier_head
    expected = np.asarray(pooled) @ head.output_weights.numpy().T + head.output_bias.numpy()
    assert max_diff(logits, expected) < TOLERANCE
    assert len(model.trainable_weights) == len(pretrainer.encoder.trainable_variables) + 2


HUB_KERAS_LAYER = """
import json, sys
import numpy as np, tensorflow as tf, tensorflow_hub as hub
path, data = sys.argv[1], np.load(sys.argv[2])
feed = {k: tf.constant(data[k]) for k in ("input_word_ids", "input_mask", "input_type_ids")}
layer = hub.KerasLayer(path, trainable=True)
pooled = layer(feed)["pooled_output"]
optimizer = tf.keras.optimizers.SGD(0.1)
losses = []
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(layer(feed, training=False)["pooled_output"]))
    losses.append(float(loss))
    optimizer.apply_gradients(zip(tape.gradient(loss, layer.trainable_weights), layer.trainable_weights))
print(json.dumps({"diff": float(np.abs(pooled.numpy() - data["pooled"]).max()),
                  "trainable": len(layer.trainable_weights), "losses": losses,
                  "keras": type(layer).__mro__[1].__module__}))
"""


def test_hub_keras_layer_under_tf_keras(exported, tmp_path):
    import json

    path, pretrainer, inputs = exported
    feed = {k: inputs[k] for k in ENCODER_KEYS}
    data = tmp_path / "inputs.npz"
    np.savez(data, pooled=np.asarray(pretrainer.encoder(feed)["pooled_output"]), **feed)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", HUB_KERAS_LAYER, path, str(data)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["keras"].startswith("tf_keras")  # really the legacy Keras, not Keras 3
    assert report["diff"] < TOLERANCE
    assert report["trainable"] == len(pretrainer.encoder.trainable_variables)
    assert report["losses"][-1] < report["losses"][0]


def test_saved_model_cli_runs_serving_default(exported, tmp_path):
    path, pretrainer, inputs = exported
    feed = {k: inputs[k] for k in ENCODER_KEYS}
    data = tmp_path / "cli_inputs.npz"
    np.savez(data, **feed)
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    out_dir = tmp_path / "cli_out"
    args = [cli, "run", "--dir", path, "--tag_set", "serve", "--signature_def", "serving_default",
            "--inputs", ";".join(f"{k}={data}[{k}]" for k in ENCODER_KEYS), "--outdir", str(out_dir)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    pooled = np.load(out_dir / "pooled_output.npy")
    assert max_diff(pooled, pretrainer.encoder(feed)["pooled_output"]) < TOLERANCE


def test_export_refuses_an_existing_path_and_leaves_no_partial_directory(exported, tmp_path):
    path, pretrainer, _ = exported
    with pytest.raises(ExportError, match="already exists"):
        export_encoder(pretrainer.config, None, path, None, True, False)
    # A checkpoint of another size fails before anything is published.
    destination = tmp_path / "never"
    other = AlbertPretrainer(tiny_config(hidden_size=48, intermediate_size=96))
    bad = checkpoints.save_original_checkpoint(other, str(tmp_path / "bad" / "model.ckpt"))
    from albert_tf.runtime.flag_errors import FlagValueError

    with pytest.raises(FlagValueError, match=r"^--checkpoint=.*/bad/model.ckpt: checkpoint does "
                       r"not match AlbertPretrainer; shape mismatches \(24\)"):
        export_encoder(pretrainer.config, bad, str(destination), None, True, False)
    assert not destination.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".never")]


def test_original_export_flags_and_hf_directories_resolve_their_files(tmp_path):
    """--albert_directory as the released tarballs (faithfulness §11.1), and an HF directory
    as --checkpoint: config, checkpoint and SentencePiece model come from the directory."""
    from albert_tf.export.tfhub import resolve_sources

    tarball = tmp_path / "albert_base"
    tarball.mkdir()
    (tarball / "30k-clean.model").write_bytes(b"spm")
    assert resolve_sources(str(tarball), None, None, "model.ckpt-best", None) == (
        str(tarball / "albert_config.json"), str(tarball / "model.ckpt-best"),
        str(tarball / "30k-clean.model"))
    assert resolve_sources(str(tarball), "own.json", "own.ckpt", "model.ckpt-best", "own.model") == (
        "own.json", "own.ckpt", "own.model")
    hf = tmp_path / "hf"
    pretrainer = AlbertPretrainer(tiny_config())
    pretrainer(random_inputs(pretrainer.config))
    checkpoints.save_hf_checkpoint(pretrainer, str(hf), spm_model_file=str(tarball / "30k-clean.model"))
    assert resolve_sources(None, None, str(hf), "model.ckpt-best", None) == (
        None, str(hf), str(hf / "spiece.model"))
    assert resolve_sources(str(hf), None, None, "model.ckpt-best", None) == (
        None, str(hf), str(hf / "spiece.model"))
