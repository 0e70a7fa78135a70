"""Encoder SavedModel in the TF2 TF-Hub conventions (faithfulness §12.1).

The export is a reusable SavedModel: `obj(inputs, training=False)` with the dict
`{input_word_ids, input_mask, input_type_ids}` → `{pooled_output, sequence_output,
encoder_outputs, default}`; `variables`, `trainable_variables` and `regularization_losses`
as `hub.KerasLayer` reads them; `call_inference` / `call_training` endpoints for Keras 3's
`TFSMLayer` (whose weights keep the `:0` names Keras 3's optimizers with slots refuse: Keras 3
fine-tuning goes through `loading.load_keras_encoder`); a `serving_default` signature;
optionally an `mlm` sub-object; and the SentencePiece model, config JSON and lower-casing flag
as assets.

An encoder built under a mixed policy (`export_tfhub --dtype=bfloat16`: its matmuls run in
bfloat16, LayerNorm and softmax in float32, variables float32) is exported the same way; its
outputs are cast to float32, so every export takes int32 ids and gives float32 tensors.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import tensorflow as tf

from albert_tf.checkpoints.tf1_hub_files import CONFIG_ASSET  # the original's asset name
from albert_tf.export.assets import asset_copy
from albert_tf.export.save_tracing import traced_for_saving
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder
from albert_tf.models.pretrainer import AlbertPretrainer


def input_signature(extra: tuple[str, ...] = ()) -> dict[str, tf.TensorSpec]:
    """int32 [batch, seq] specs for the encoder inputs (plus `extra` names, e.g. positions)."""
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES + extra}


def _encoder_outputs(encoder: AlbertEncoder, inputs: dict, training: bool) -> dict[str, Any]:
    """The export's outputs, float32 whatever the encoder's compute dtype."""
    out = encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
    pooled = tf.cast(out["pooled_output"], tf.float32)
    return {
        "pooled_output": pooled,
        "sequence_output": tf.cast(out["sequence_output"], tf.float32),
        "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]],
        "default": pooled,
    }


def _flat(outputs: dict[str, Any]) -> dict[str, tf.Tensor]:
    """Signature outputs must be flat tensors: encoder_outputs become encoder_outputs_{i}."""
    flat = {k: v for k, v in outputs.items() if k != "encoder_outputs"}
    for i, tensor in enumerate(outputs["encoder_outputs"]):
        flat[f"encoder_outputs_{i}"] = tensor
    return flat


def _reusable_object(call, variables, trainable_variables, signature) -> tf.train.Checkpoint:
    """A trackable with the reusable-SavedModel attributes, traced for both training modes."""
    obj = tf.train.Checkpoint()
    function = tf.function(call, autograph=False)
    # Traced as saving needs them, so it reuses these traces (export/save_tracing.py).
    with traced_for_saving():
        function.get_concrete_function(signature, training=False)
        function.get_concrete_function(signature, training=True)
    obj.__call__ = function
    obj.call_inference = tf.function(lambda inputs: _flat(call(inputs, training=False)),
                                     input_signature=[signature], autograph=False)
    obj.call_training = tf.function(lambda inputs: _flat(call(inputs, training=True)),
                                    input_signature=[signature], autograph=False)
    # Raw tf.Variables (Keras 3 wraps them) so every loader sees ordinary variables.
    obj.variables = [v.value for v in variables]
    obj.trainable_variables = [v.value for v in trainable_variables]
    obj.regularization_losses = []
    return obj


def build_export_object(encoder: AlbertEncoder, spm_model_file: str | None, config_file: str | None,
                        do_lower_case: bool, pretrainer: AlbertPretrainer | None = None
                        ) -> tuple[tf.train.Checkpoint, dict[str, Any]]:
    """The root object to save and its signatures. `pretrainer` adds the `mlm` sub-object."""
    signature = input_signature()
    root = _reusable_object(lambda inputs, training=False: _encoder_outputs(encoder, inputs, training),
                            encoder.variables, encoder.trainable_variables, signature)
    if pretrainer is not None:
        if pretrainer.encoder is not encoder:
            raise ValueError("the pretrainer must wrap the exported encoder")

        def mlm_call(inputs, training=False):
            outputs = _encoder_outputs(encoder, inputs, training)
            outputs["mlm_logits"] = pretrainer.mlm_head(
                outputs["sequence_output"], inputs["masked_lm_positions"])
            return outputs

        root.mlm = _reusable_object(mlm_call, pretrainer.variables, pretrainer.trainable_variables,
                                    input_signature(("masked_lm_positions",)))
    if spm_model_file:
        root.sp_model_file = tf.saved_model.Asset(spm_model_file)
    if config_file:
        root.albert_config_file = tf.saved_model.Asset(config_file)
    root.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
    # "float32" or "bfloat16": the dtype the export's matmuls run in (its outputs are float32).
    root.compute_dtype = tf.Variable(str(encoder.compute_dtype), trainable=False,
                                     name="compute_dtype")
    serving = tf.function(lambda inputs: _flat(_encoder_outputs(encoder, inputs, False)),
                          input_signature=[signature], autograph=False)
    return root, {"serving_default": serving.get_concrete_function()}


def save_encoder_export(encoder: AlbertEncoder, export_path: str, spm_model_file: str | None = None,
                        do_lower_case: bool = True, pretrainer: AlbertPretrainer | None = None) -> str:
    """Writes the encoder SavedModel to `export_path`, with `encoder.config` as the asset
    `albert_config.json` (the name loaders look for)."""
    with tempfile.TemporaryDirectory() as scratch:
        config_file = os.path.join(scratch, CONFIG_ASSET)
        encoder.config.to_json_file(config_file)
        if spm_model_file:
            spm_model_file = asset_copy(spm_model_file, scratch)
        root, signatures = build_export_object(encoder, spm_model_file, config_file, do_lower_case,
                                               pretrainer)
        tf.saved_model.save(root, os.fspath(export_path), signatures=signatures)
    return os.fspath(export_path)
