"""The serving graph made for inference engines: the encoder's two outputs, weights frozen.

The TF-Hub encoder export (`encoder_export.py`) is made for fine-tuning: variables, a
`training` argument, every layer's `encoder_outputs`. A server needs none of that, and an engine
handed it (OpenVINO's `convert_model`, TFLite's converter, TensorFlow's own grappler) has to
carry the variable reads and the unused outputs through. The serving graph here is the same
computation with:

- only `sequence_output` and `pooled_output` (float32), from the three int32 `[batch, seq]`
  inputs `input_word_ids`, `input_mask`, `input_type_ids`;
- no `training` input (inference mode is traced in);
- the weights frozen as constants, so each engine can fold, pre-pack and fuse them at load: in a
  bfloat16 graph the cast of each shared weight to bfloat16 (12 applications of the one shared
  layer in ALBERT-base) is constant-folded once at load instead of running on every call.

The numbers are the Keras model's: freezing replaces variable reads by their values and nothing
else (tests/export/test_serving.py checks 1e-5 against the Keras model).

A fine-tuned task model (classifier, SQuAD span labeler) takes the same three inputs: with its
`outputs_fn` (e.g. logits → probabilities, predictions) the same functions write its serving
graph (glue/export.py, squad/export.py; tests/export/test_task_serving.py).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Callable, Iterator, Mapping

import keras
import numpy as np
import tensorflow as tf

from albert_tf.export.layout import SERVING_DIR  # noqa: F401  (its public name here)
from albert_tf.serving.layout import CONFIG_ASSET, config_asset_path  # noqa: F401  (public here)
from albert_tf.serving.manifest import ENCODER_OUTPUTS, Manifest
from albert_tf.models.encoder import FEATURE_TO_INPUT, INPUT_NAMES, AlbertEncoder
from albert_tf.models.precision import float32_copy  # noqa: F401  (its public name here)
from albert_tf.models.frozen_weights import frozen_function

SERVING_OUTPUTS = ENCODER_OUTPUTS
# A task export's TFLite file takes the original's input names (tflite.py) → ours, INPUT_NAMES.
ORIGINAL_INPUT_NAMES = FEATURE_TO_INPUT

# The model's inference outputs → the serving graph's named outputs.
OutputsFn = Callable[[Mapping[str, tf.Tensor]], dict[str, tf.Tensor]]


def check_inputs(vocab_size: int, batch: int, seq_length: int) -> dict[str, np.ndarray]:
    """Deterministic int32 inputs, the last rows padded, two segments."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab_size, (batch, seq_length)).astype(np.int32)
    mask = np.ones_like(ids)
    for row in range(1, batch):
        mask[row, seq_length - seq_length // (row + 2):] = 0
    types = np.zeros_like(ids)
    types[:, seq_length // 2:] = 1
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types * mask}


def serving_specs(seq_length: int | None = None) -> dict[str, tf.TensorSpec]:
    """int32 `[batch, seq]` specs of the three inputs (`seq_length` None: any length)."""
    return {name: tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in INPUT_NAMES}


def encoder_outputs(out: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """An encoder's serving outputs: sequence_output and pooled_output in float32."""
    return {name: tf.cast(out[name], tf.float32) for name in SERVING_OUTPUTS}


def _engine_layer_norm(self: Any, inputs: tf.Tensor) -> tf.Tensor:
    """LayerNorm as (x − mean) / sqrt(var + ε) · γ + β over axes [-1], in float32: the same
    numbers as Keras' x · inv + (β − mean · inv) within float round-off, in the one form
    OpenVINO's MVN fusion recognises (25 MVN ops in ALBERT-base instead of 2 Reduce + 4
    Eltwise each; benchmarks/openvino_fusions.py). A list of axes: a scalar axis makes that
    fusion fail; divide by sqrt: a multiply by rsqrt is taken as RMSNorm instead."""
    x = tf.cast(inputs, tf.float32)
    mean = tf.reduce_mean(x, [-1], keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.square(centered), [-1], keepdims=True)
    out = centered / tf.sqrt(variance + self.epsilon) * self.gamma + self.beta
    return tf.cast(out, self.compute_dtype)


@contextlib.contextmanager
def engine_layer_norm() -> Iterator[None]:
    """While tracing a serving graph: every Keras LayerNormalization (ours are all over the
    last axis, scale and center on) computes in `_engine_layer_norm`'s form."""
    original = keras.layers.LayerNormalization.call
    keras.layers.LayerNormalization.call = _engine_layer_norm
    try:
        yield
    finally:
        keras.layers.LayerNormalization.call = original


def frozen_serving_function(encoder: AlbertEncoder, seq_length: int | None = None,
                            outputs_fn: OutputsFn = encoder_outputs
                            ) -> tf.types.experimental.GenericFunction:
    """A tf.function of the three int32 inputs (keyword arguments) → outputs_fn of the model's
    inference outputs (default: an encoder's {sequence_output, pooled_output}), whose graph
    holds the weights as constants. `encoder`: an AlbertEncoder or a task model taking the same
    inputs."""
    specs = serving_specs(seq_length)

    @tf.function(input_signature=[specs[name] for name in INPUT_NAMES])
    def live(input_word_ids, input_mask, input_type_ids):
        inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                  "input_type_ids": input_type_ids}
        return outputs_fn(encoder(inputs, training=False))

    with engine_layer_norm():  # traced here, once
        return frozen_function(live)


def save_serving_model(encoder: AlbertEncoder, path: str,
                       outputs_fn: OutputsFn = encoder_outputs) -> str:
    """Writes a SavedModel whose only signature, `serving_default`, is the frozen serving graph
    (no variables), with the model's config as the asset albert_config.json."""
    module = tf.Module()
    module.serve = frozen_serving_function(encoder, outputs_fn=outputs_fn)
    with tempfile.TemporaryDirectory() as scratch:
        config_file = os.path.join(scratch, CONFIG_ASSET)
        encoder.config.to_json_file(config_file)
        module.albert_config_file = tf.saved_model.Asset(config_file)
        tf.saved_model.save(module, os.fspath(path), signatures={"serving_default": module.serve})
    return os.fspath(path)


def describe(encoder: AlbertEncoder) -> Manifest:
    """What a loader needs to know that is not in the graph: the compute dtype, the longest
    input the position embeddings allow and the id ranges the embeddings accept."""
    config = encoder.config
    return Manifest(compute_dtype=str(encoder.compute_dtype),
                    max_seq_length=int(config.max_position_embeddings),
                    vocab_size=int(config.vocab_size), type_vocab_size=int(config.type_vocab_size))
