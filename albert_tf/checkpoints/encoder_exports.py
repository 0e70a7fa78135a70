"""Loading an encoder export (`export_tfhub`) back as a trainable Keras 3 layer, beside the
readers of every other weight format.

`load_keras_encoder` restores the export into our own `AlbertEncoder` (the way to fine-tune an
export in a Keras 3 model, with any Keras optimizer); `HubEncoder` wraps the SavedModel's
graph and variables in place (`--albert_hub_module_handle`).
"""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.encoder_export_files import EXPORT_DTYPE_POLICIES, EXPORT_DTYPES
from albert_tf.checkpoints.ours import keyed_variables
from albert_tf.checkpoints.report import compare
from albert_tf.checkpoints.tf1_hub_files import ASSETS_DIR, CONFIG_ASSET, SAVED_MODEL_FILE
from albert_tf.config import AlbertConfig
from albert_tf.models.encoder import AlbertEncoder


def is_encoder_export(path: str) -> bool:
    """True when `path` is a SavedModel directory (as written by `export_tfhub`)."""
    return tf.io.gfile.exists(os.path.join(os.fspath(path), SAVED_MODEL_FILE))


class HubEncoder(keras.layers.Layer):
    """An exported encoder as a Keras layer: same dict in/out as `AlbertEncoder`.

    The SavedModel's own variables become this layer's weights (no copy), so fine-tuning
    trains the exported variables; `training=True` runs the export's training graph (dropout).
    Not serialisable to `.keras` files: the layer refers to a directory on disk.
    """

    def __init__(self, handle: str, trainable: bool = True, **kwargs: Any):
        super().__init__(trainable=trainable, **kwargs)
        self.handle = os.fspath(handle)
        self._loaded = _load_export(self.handle)
        trainable_ids = {id(v) for v in self._loaded.trainable_variables}
        for variable in self._loaded.variables:
            wrapped = keras.Variable(initializer=variable, trainable=id(variable) in trainable_ids,
                                     dtype=variable.dtype, shape=variable.shape,
                                     name=variable.name.split(":")[0].replace("/", "_"))
            self._track_variable(wrapped)
        self.config = load_export_config(self.handle)
        asset = getattr(self._loaded, "sp_model_file", None)
        self.sp_model_file = asset.asset_path.numpy().decode("utf-8") if asset is not None else None
        logging.info("Encoder export %s: %d variables (%d trainable) will be fine-tuned",
                     self.handle, len(self._loaded.variables), len(trainable_ids))
        self.built = True

    def call(self, inputs, training=None):
        return self._loaded({k: tf.cast(inputs[k], tf.int32) for k in
                             ("input_word_ids", "input_mask", "input_type_ids")},
                            training=bool(training))

    def compute_output_spec(self, inputs, training=None):
        batch, seq = inputs["input_word_ids"].shape
        hidden = self.config.hidden_size
        spec = keras.KerasTensor
        layers = self.config.num_hidden_layers * self.config.inner_group_num
        return {"pooled_output": spec((batch, hidden)), "sequence_output": spec((batch, seq, hidden)),
                "encoder_outputs": [spec((batch, seq, hidden)) for _ in range(layers)],
                "default": spec((batch, hidden))}


def _load_export(handle: str) -> Any:
    """The reloaded SavedModel, refused unless it has an encoder export's attributes."""
    loaded = tf.saved_model.load(handle)
    for attribute in ("variables", "trainable_variables", "__call__"):
        if not hasattr(loaded, attribute):
            raise ValueError(f"{handle}: not an encoder export (no `{attribute}`)")
    return loaded


def load_keras_encoder(handle: str, dtype: str | None = None) -> AlbertEncoder:
    """An encoder export restored into our Keras 3 `AlbertEncoder`, to fine-tune in a Keras model.

    Why not `keras.layers.TFSMLayer(..., trainable=True)`: it names its weights after the
    SavedModel's TensorFlow names (`embeddings_word_embeddings:0`), and every Keras 3 optimizer
    with slots (Adam, AdamW, LAMB) builds a slot name from them that TensorFlow refuses (the
    `:0`, which every TensorFlow variable name ends in); only SGD trains. The encoder here is
    built from the export's `albert_config.json` asset under its dtype, and every variable is
    assigned from the export's by name, strictly (any missing, unused or mis-shaped variable is
    one `CheckpointMismatchError`). It owns its weights, so it trains with any optimizer, saves
    to `.keras` files and checkpoints, and needs the export directory no more once loaded.

    Args:
      handle: the export directory (`export_tfhub --export_path`).
      dtype: "float32" or "bfloat16" (the mixed policy: bfloat16 matmuls, float32 variables);
        default the export's own (`export_tfhub --dtype`).

    Example:
        >>> encoder = load_keras_encoder("out/encoder")
        >>> inputs = {name: keras.Input((None,), dtype="int32", name=name)
        ...           for name in ("input_word_ids", "input_mask", "input_type_ids")}
        >>> model = keras.Model(inputs, keras.layers.Dense(2)(encoder(inputs)["pooled_output"]))
        >>> model.compile(optimizer=keras.optimizers.AdamW(2e-5), loss=...)
    """
    handle = os.fspath(handle)
    loaded = _load_export(handle)
    config = load_export_config(handle)
    stored = getattr(loaded, "compute_dtype", None)  # exports before --dtype: float32
    dtype = dtype or (stored.numpy().decode("utf-8") if stored is not None else "float32")
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(EXPORT_DTYPES)}, got {dtype!r}")
    encoder = AlbertEncoder(config, dtype=EXPORT_DTYPE_POLICIES[dtype])
    targets = keyed_variables(encoder.variables)
    # The SavedModel keeps TensorFlow's variable names: the Keras path and ":0".
    sources = {key.rpartition(":")[0] or key: variable
               for key, variable in keyed_variables(loaded.variables).items()}
    report = compare(handle, "AlbertEncoder", {k: v.shape for k, v in targets.items()},
                     {k: v.shape for k, v in sources.items()}, allow_missing=(), allow_unused=(),
                     kind="export")
    for name in report.restored:
        targets[name].assign(sources[name])
    logging.info("Encoder export %s restored into AlbertEncoder (%s): %s", handle, dtype,
                 report.summary())
    return encoder


def export_spm_model(handle: str | None, spm_model_file: str | None) -> str | None:
    """The SentencePiece model to tokenize with: the export's own when fine-tuning an export.

    The original took the module's model whenever `--spm_model_file` was set and ignored
    its path (faithfulness Q21); here an explicit `--spm_model_file` wins and the export's asset is
    the default, which is logged.
    """
    if not handle or spm_model_file:
        return spm_model_file
    path = os.path.join(os.fspath(handle), ASSETS_DIR)
    models = [name for name in tf.io.gfile.listdir(path) if name.endswith(".model")] \
        if tf.io.gfile.exists(path) else []
    if len(models) != 1:
        raise ValueError(f"{handle}: expected one SentencePiece model in assets/, found {models}; "
                         "pass --spm_model_file")
    logging.info("Tokenizing with the export's SentencePiece model %s", models[0])
    return os.path.join(path, models[0])


def load_export_config(handle: str) -> AlbertConfig:
    """The AlbertConfig stored in the export's assets."""
    path = os.path.join(os.fspath(handle), ASSETS_DIR, CONFIG_ASSET)
    if not tf.io.gfile.exists(path):
        raise ValueError(f"{handle}: the export carries no albert_config.json asset")
    return AlbertConfig.from_json_file(path)
