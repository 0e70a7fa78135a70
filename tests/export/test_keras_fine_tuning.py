"""Fine-tuning an encoder export inside a Keras 3 model with Keras 3's own optimizers (AdamW).

`keras.layers.TFSMLayer` names its weights after the SavedModel's variables (`..._embeddings:0`)
and every optimizer with slots refuses them; `load_keras_encoder` (the README's way) restores
the export into our `AlbertEncoder`, and `HubEncoder` (`--albert_hub_module_handle`) wraps
the export's variables under names Keras accepts. Both must train with `fit` + AdamW.
"""

import json
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import CheckpointMismatchError
from albert_tf.checkpoints.encoder_exports import HubEncoder, load_keras_encoder
from albert_tf.export import save_encoder_export
from albert_tf.models import AlbertEncoder
from tests.conftest import random_inputs, tiny_config
from tests.export.tiny_exports import shared_export

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
TOLERANCE = 1e-5  # float32 restored weights vs the export's own graph
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.01
EPOCHS = 4
BATCH = 8


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> str:
    """A plain float32 encoder export (the serving matrix's fp32 one, shared: not changed)."""
    path, _ = shared_export(tmp_path_factory, "fp32")
    return path


def separable_task(examples: int = 16, seq: int = 10) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Class 0 sentences use word ids 5..49, class 1 ids 500..544: the pooled outputs differ."""
    rng = np.random.default_rng(0)
    labels = np.arange(examples) % 2
    ids = (rng.integers(5, 50, (examples, seq)) + 495 * labels[:, None]).astype("int32")
    mask = np.ones_like(ids)
    mask[1::3, seq - 3:] = 0
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}, labels


def serving_outputs(path: str, features: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The export's own `serving_default` signature: no Keras code of ours involved."""
    signature = tf.saved_model.load(path).signatures["serving_default"]
    return {k: v.numpy() for k, v in signature(**{k: tf.constant(features[k])
                                                   for k in ENCODER_KEYS}).items()}


def classifier(encoder: keras.layers.Layer) -> keras.Model:
    """The README's shape: the encoder as a layer of a functional model, a Dense head."""
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ENCODER_KEYS}
    logits = keras.layers.Dense(2, name="head")(encoder(inputs)["pooled_output"])
    return keras.Model(inputs, logits)


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32)).max())


@pytest.mark.parametrize("loader", [load_keras_encoder, HubEncoder], ids=lambda f: f.__name__)
def test_fit_with_adamw_trains_the_encoder(export, loader):
    features, labels = separable_task()
    encoder = loader(export)
    # Restored, not re-initialised: before training, the export's own outputs.
    want = serving_outputs(export, features)
    got = encoder(features)
    for key in ("pooled_output", "sequence_output"):
        assert max_diff(got[key], want[key]) < TOLERANCE, key
    model = classifier(encoder)
    optimizer = keras.optimizers.AdamW(LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    weights = encoder.trainable_weights
    assert len(weights) == len(tf.saved_model.load(export).trainable_variables)
    before = [w.numpy().copy() for w in weights]
    first = model.evaluate(features, labels, batch_size=BATCH, verbose=0)
    model.fit(features, labels, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    last = model.evaluate(features, labels, batch_size=BATCH, verbose=0)
    assert last < first
    steps = int(optimizer.iterations.numpy())
    assert steps == EPOCHS * len(labels) // BATCH
    # Weight decay alone moves a weight by at most steps·lr·wd·|w|; the gradients' Adam steps
    # (~lr each) must move every encoder weight well beyond that, except the attention key
    # bias: it adds the same q·b to every logit of a row, which the softmax cancels (zero
    # gradient, in any BERT).
    decay_bound = steps * LEARNING_RATE * WEIGHT_DECAY * max(float(np.abs(b).max()) for b in before)
    unchanged = [w.path for w, b in zip(weights, before)
                 if max_diff(w.numpy(), b) <= 10 * decay_bound]
    assert all(re.search(r"attention.key.bias$", path) for path in unchanged), (
        f"encoder weights fit did not train: {unchanged}")


def test_the_restored_encoder_is_an_ordinary_keras_model(export, tmp_path):
    """It owns its weights: a `.keras` file of the model reloads without the export."""
    features, _ = separable_task()
    own = tmp_path / "encoder"  # a copy: the shared export stays where other tests read it
    shutil.copytree(export, own)
    encoder = load_keras_encoder(str(own))
    assert isinstance(encoder, AlbertEncoder) and encoder.compute_dtype == "float32"
    model = classifier(encoder)
    model.save(tmp_path / "model.keras")
    shutil.move(own, tmp_path / "moved")
    reloaded = keras.models.load_model(tmp_path / "model.keras")
    assert max_diff(reloaded(features), model(features)) < TOLERANCE


def test_a_bfloat16_export_restores_under_its_policy(tmp_path):
    config = tiny_config()
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        original = AlbertEncoder(config)
    finally:
        keras.config.set_dtype_policy(previous)
    path = save_encoder_export(original, str(tmp_path / "encoder"))
    features = {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}
    restored = load_keras_encoder(path)
    assert keras.config.dtype_policy().name == previous.name
    assert restored.compute_dtype == "bfloat16" and restored.variable_dtype == "float32"
    # float32 variables restored bit for bit, so the same model under the same policy.
    assert [w.path for w in restored.weights] == [w.path for w in original.weights]
    assert all(np.array_equal(r.numpy(), o.numpy())
               for r, o in zip(restored.weights, original.weights))
    assert restored(features)["pooled_output"].dtype == original(features)["pooled_output"].dtype
    assert load_keras_encoder(path, dtype="float32").compute_dtype == "float32"
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16, got 'fp16'"):
        load_keras_encoder(path, dtype="fp16")


def test_an_export_whose_config_does_not_fit_its_variables_is_refused(export, tmp_path):
    copy = tmp_path / "encoder"
    shutil.copytree(export, copy)
    config_file = copy / "assets" / "albert_config.json"
    values = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**values, "intermediate_size": 2 * values["intermediate_size"]}))
    with pytest.raises(CheckpointMismatchError, match=r"does not match AlbertEncoder; shape "
                       r"mismatches \(3\): transformer/group_0_inner_group_0_ffn/intermediate/kernel"):
        load_keras_encoder(str(copy))
