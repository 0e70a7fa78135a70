"""TF Model Garden ALBERT artifacts, written by Model Garden's own code (tf-models-nightly).

From an original-format checkpoint: `tf2_albert_encoder_checkpoint_converter.convert_checkpoint`
writes the object checkpoints (`tf.train.Checkpoint(encoder=AlbertEncoder)`, and a
`BertPretrainerV2` with its masked-LM head), and `export_tfhub_lib.export_model(...,
encoder_config=<albert>, sp_model_file=...)` exports them as TF2 Hub encoders (with_mlm False
and True), the layout of `albert_en_base/3` on TF Hub / Kaggle. A BERT encoder export (not
ALBERT) is written the same way for the refusal tests. `saved_model_outputs` runs a written
export's own forward pass (`tf.saved_model.load`), the reference for our outputs.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from albert_tf import AlbertConfig

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def _albert_encoder_config(config: AlbertConfig):
    from official.nlp.configs import encoders

    return encoders.EncoderConfig(type="albert", albert=encoders.AlbertEncoderConfig(
        vocab_size=config.vocab_size, embedding_width=config.embedding_size,
        hidden_size=config.hidden_size, num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads, hidden_activation=config.hidden_act,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range))


def _converter_module():
    """Model Garden's tf2_albert_encoder_checkpoint_converter, imported without defining its
    absl flags (`--albert_config_file`… would clash with ours in one process)."""
    import importlib
    from unittest import mock

    from absl import flags

    name = "official.nlp.tools.tf2_albert_encoder_checkpoint_converter"
    no_flag = mock.Mock()
    with mock.patch.multiple(flags, DEFINE_string=no_flag, DEFINE_enum=no_flag):
        return importlib.import_module(name)


def _convert(config_file: str, original: str, directory: str, converted_model: str) -> str:
    """Model Garden's converter (its `main` minus flags): an original checkpoint → an object
    checkpoint of an AlbertEncoder ("encoder") or a BertPretrainerV2 ("pretrainer")."""
    from official.legacy.albert import configs

    converter = _converter_module()

    os.makedirs(os.path.join(directory, "temp_v1"), exist_ok=True)  # the converter expects it
    name = "encoder" if converted_model == "encoder" else "pretrainer"
    converter.convert_checkpoint(configs.AlbertConfig.from_json_file(config_file),
                                 os.path.join(directory, "ckpt"), original, name,
                                 converted_model)
    return directory


def write_bert_export(path: str, spm_model_file: str) -> str:
    """A tiny Model Garden BERT encoder (`BertEncoder`, not ALBERT) exported by export_model."""
    from official.nlp.configs import encoders
    from official.nlp.modeling import networks
    from official.nlp.tools import export_tfhub_lib

    bert = encoders.BertEncoderConfig(vocab_size=100, hidden_size=16, num_layers=2,
                                      num_attention_heads=2, intermediate_size=32,
                                      max_position_embeddings=32)
    encoder = networks.BertEncoder(vocab_size=100, hidden_size=16, num_layers=2,
                                   num_attention_heads=2, intermediate_size=32,
                                   max_sequence_length=32, type_vocab_size=2,
                                   dict_outputs=True)
    checkpoint = tf.train.Checkpoint(encoder=encoder).save(path + ".ckpt/ckpt")
    export_tfhub_lib.export_model(path, encoder_config=encoders.EncoderConfig(
        type="bert", bert=bert), model_checkpoint_path=checkpoint, with_mlm=False,
        sp_model_file=spm_model_file)
    return path


def saved_model_outputs(path: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The export's own forward pass: its encoder outputs on `inputs`, and `mlm_logits` of its
    `.mlm` sub-object where it has one (export_model's with_mlm=True)."""
    loaded = tf.saved_model.load(path)
    feeds = {k: tf.constant(inputs[k]) for k in ENCODER_KEYS}
    outputs = loaded(feeds, training=False)
    result = {"sequence_output": outputs["sequence_output"].numpy(),
              "pooled_output": outputs["pooled_output"].numpy(),
              "default": outputs["default"].numpy(),
              "encoder_outputs": [t.numpy() for t in outputs["encoder_outputs"]]}
    if hasattr(loaded, "mlm"):
        mlm = loaded.mlm({**feeds, "masked_lm_positions": tf.constant(
            inputs["masked_lm_positions"])}, training=False)
        result["mlm_logits"] = mlm["mlm_logits"].numpy()
    return result


def write_model_garden_pretrainer(root: str, config: AlbertConfig, original_checkpoint: str,
                                  spm_model_file: str) -> tuple[str, str]:
    """(TF2 Hub export with_mlm, BertPretrainerV2 object checkpoint) of the original checkpoint:
    the cheaper half of `write_model_garden_artifacts`, for tests of every kind."""
    from official.nlp.tools import export_tfhub_lib

    config_file = os.path.join(root, "albert_config.json")
    config.to_json_file(config_file)
    checkpoint = _convert(config_file, original_checkpoint, os.path.join(root, "mg_pretrainer"),
                          "pretrainer")
    export = os.path.join(root, "albert_en_tiny_mlm")
    export_tfhub_lib.export_model(
        export, encoder_config=_albert_encoder_config(config),
        model_checkpoint_path=tf.train.latest_checkpoint(checkpoint), with_mlm=True,
        sp_model_file=spm_model_file)
    return export, checkpoint


def write_model_garden_artifacts(root: str, config: AlbertConfig, original_checkpoint: str,
                                 spm_model_file: str) -> SimpleNamespace:
    """Object checkpoints and TF2 Hub exports of the original checkpoint, by Model Garden."""
    from official.nlp.tools import export_tfhub_lib

    config_file = os.path.join(root, "albert_config.json")
    config.to_json_file(config_file)
    encoder_ckpt = _convert(config_file, original_checkpoint, os.path.join(root, "mg_encoder"),
                            "encoder")
    pretrainer_ckpt = _convert(config_file, original_checkpoint,
                               os.path.join(root, "mg_pretrainer"), "pretrainer")
    hub, hub_mlm = os.path.join(root, "albert_en_tiny"), os.path.join(root, "albert_en_tiny_mlm")
    for path, source, with_mlm in ((hub, encoder_ckpt, False), (hub_mlm, pretrainer_ckpt, True)):
        export_tfhub_lib.export_model(
            path, encoder_config=_albert_encoder_config(config),
            model_checkpoint_path=tf.train.latest_checkpoint(source), with_mlm=with_mlm,
            sp_model_file=spm_model_file)
    bert = write_bert_export(os.path.join(root, "bert_en_tiny"), spm_model_file)
    return SimpleNamespace(hub=hub, hub_mlm=hub_mlm, encoder_checkpoint=encoder_ckpt,
                           pretrainer_checkpoint=pretrainer_ckpt, bert_hub=bert,
                           config_file=config_file)
