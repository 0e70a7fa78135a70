"""Loading an encoder export back as a trainable Keras 3 layer (`--albert_hub_module_handle`)."""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf.config import AlbertConfig
from albert_tf.export.encoder_export import CONFIG_ASSET


def is_encoder_export(path: str) -> bool:
    """True when `path` is a SavedModel directory (as written by `export_tfhub`)."""
    return tf.io.gfile.exists(os.path.join(os.fspath(path), "saved_model.pb"))


class HubEncoder(keras.layers.Layer):
    """An exported encoder as a Keras layer: same dict in/out as `AlbertEncoder`.

    The SavedModel's own variables become this layer's weights (no copy), so fine-tuning
    trains the exported variables; `training=True` runs the export's training graph (dropout).
    Not serialisable to `.keras` files: the layer refers to a directory on disk.
    """

    def __init__(self, handle: str, trainable: bool = True, **kwargs: Any):
        super().__init__(trainable=trainable, **kwargs)
        self.handle = os.fspath(handle)
        self._loaded = tf.saved_model.load(self.handle)
        for attribute in ("variables", "trainable_variables", "__call__"):
            if not hasattr(self._loaded, attribute):
                raise ValueError(f"{self.handle}: not an encoder export (no `{attribute}`)")
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


def export_spm_model(handle: str | None, spm_model_file: str | None) -> str | None:
    """The SentencePiece model to tokenize with: the export's own when fine-tuning an export.

    The original took the module's model whenever `--spm_model_file` was set and ignored
    its path (faithfulness Q21); here an explicit `--spm_model_file` wins and the export's asset is
    the default, which is logged.
    """
    if not handle or spm_model_file:
        return spm_model_file
    path = os.path.join(os.fspath(handle), "assets")
    models = [name for name in tf.io.gfile.listdir(path) if name.endswith(".model")] \
        if tf.io.gfile.exists(path) else []
    if len(models) != 1:
        raise ValueError(f"{handle}: expected one SentencePiece model in assets/, found {models}; "
                         "pass --spm_model_file")
    logging.info("Tokenizing with the export's SentencePiece model %s", models[0])
    return os.path.join(path, models[0])


def load_export_config(handle: str) -> AlbertConfig:
    """The AlbertConfig stored in the export's assets."""
    path = os.path.join(os.fspath(handle), "assets", CONFIG_ASSET)
    if not tf.io.gfile.exists(path):
        raise ValueError(f"{handle}: the export carries no albert_config.json asset")
    return AlbertConfig.from_json_file(path)
