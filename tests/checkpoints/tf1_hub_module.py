"""A TF1 Hub module in the layout of the original's export_to_tfhub.py, built with TF1 graph code.

tensorflow_hub 0.16 can no longer write this format, so the module is built the way the
original's export does, with `tf.compat.v1` graph code and `tf.compat.v1.saved_model.Builder`:
the original's ALBERT computation (modeling.py: embedding lookup, LayerNorm, factorized
projection, the shared attention+FFN block, pooler; export_to_tfhub.py: the MLM and SOP heads)
re-written here from the original's formulas, independently of our Keras layers, over
variables named as the original names them (faithfulness §3.1–3.2) and filled from an original
TF1 checkpoint. Two MetaGraphs (tag sets `{}` and `{"train"}`), the signatures `tokens`, `sop`,
`mlm` and `tokenization_info`; assets as tensorflow_hub stores them (the `saved_model_assets`
collection, the asset Consts holding `SAVEDMODEL-ASSET`); `tfhub_module.pb` = ModuleDef
format 3. `run_signature` runs a signature of the written module in a `tf.compat.v1.Session`.
"""

from __future__ import annotations

import math
import os
import shutil

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

from albert_tf import AlbertConfig

v1 = tf.compat.v1
ASSET_FILES = ("albert_config.json", "30k-clean.model", "30k-clean.vocab")
MODULE_DEF_V3 = b"\x08\x03"  # tensorflow_hub ModuleDef{format: FORMAT_V3}


def _gelu(x):  # the original's gelu: the tanh approximation
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


ACTIVATIONS = {"gelu": _gelu, "relu": tf.nn.relu, "tanh": tf.tanh, "linear": lambda x: x}


class _Graph:
    """The original's forward pass over variables named (and shaped) as in `values`."""

    def __init__(self, config: AlbertConfig, values: dict[str, np.ndarray], training: bool):
        self.config, self.values, self.training = config, values, training
        self.variables: dict[str, tf.Variable] = {}

    def var(self, name: str):
        if name not in self.variables:
            value = self.values[name]
            self.variables[name] = v1.get_variable(name, value.shape, tf.as_dtype(value.dtype),
                                                   initializer=v1.zeros_initializer())
        return self.variables[name]

    def dropout(self, x, rate: float):
        return tf.nn.dropout(x, rate=rate) if self.training and rate > 0 else x

    def layer_norm(self, x, scope: str):  # contrib layer_norm: last axis, ε 1e-12
        mean, variance = tf.nn.moments(x, [-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, self.var(scope + "/beta"),
                                         self.var(scope + "/gamma"), 1e-12)

    def dense(self, x, scope: str, activation=None):
        y = tf.tensordot(x, self.var(scope + "/kernel"), [[x.shape.rank - 1], [0]])
        y = y + self.var(scope + "/bias")
        return activation(y) if activation else y

    def encoder(self, input_ids, input_mask, segment_ids):
        c = self.config
        batch, seq = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        x = tf.gather(self.var("bert/embeddings/word_embeddings"), input_ids)
        x += tf.gather(self.var("bert/embeddings/token_type_embeddings"), segment_ids)
        x += tf.slice(self.var("bert/embeddings/position_embeddings"), [0, 0], [seq, -1])[None]
        x = self.dropout(self.layer_norm(x, "bert/embeddings/LayerNorm"), c.hidden_dropout_prob)
        if "bert/encoder/embedding_hidden_mapping_in/kernel" in self.values:
            x = self.dense(x, "bert/encoder/embedding_hidden_mapping_in")
        # create_attention_mask_from_input_mask, then the −10000 adder (Q31).
        mask = tf.cast(tf.reshape(input_mask, [batch, 1, 1, seq]), tf.float32)
        adder = (1.0 - mask) * -10000.0
        layers_per_group = c.num_hidden_layers // c.num_hidden_groups
        for layer in range(c.num_hidden_layers):
            group = layer // layers_per_group
            for inner in range(c.inner_group_num):
                x = self.block(x, f"bert/encoder/transformer/group_{group}/inner_group_{inner}",
                               adder, batch, seq)
        first = x[:, 0]
        pooled = self.dense(first, "bert/pooler/dense", tf.tanh)
        return x, pooled

    def block(self, x, scope: str, adder, batch, seq):
        c = self.config
        heads, width = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        attention = scope + "/attention_1"

        def split(name):
            y = self.dense(x, f"{attention}/self/{name}")
            return tf.transpose(tf.reshape(y, [batch, seq, heads, width]), [0, 2, 1, 3])

        q, k, v = split("query"), split("key"), split("value")
        scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(width)) + adder
        probs = self.dropout(tf.nn.softmax(scores), c.attention_probs_dropout_prob)
        context = tf.reshape(tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3]),
                             [batch, seq, c.hidden_size])
        out = self.dropout(self.dense(context, f"{attention}/output/dense"), c.hidden_dropout_prob)
        out = self.layer_norm(out + x, scope + "/LayerNorm")
        ffn = self.dense(out, scope + "/ffn_1/intermediate/dense", ACTIVATIONS[c.hidden_act])
        ffn = self.dropout(self.dense(ffn, scope + "/ffn_1/intermediate/output/dense"),
                           c.hidden_dropout_prob)
        return self.layer_norm(ffn + out, scope + "/LayerNorm_1")

    def mlm_logits(self, sequence, positions):  # export_to_tfhub.get_mlm_logits
        batch, seq = tf.shape(sequence)[0], tf.shape(sequence)[1]
        offsets = tf.reshape(tf.range(batch) * seq, [-1, 1])
        flat = tf.reshape(sequence, [-1, self.config.hidden_size])
        x = tf.gather(flat, tf.reshape(positions + offsets, [-1]))
        x = self.dense(x, "cls/predictions/transform/dense", ACTIVATIONS[self.config.hidden_act])
        x = self.layer_norm(x, "cls/predictions/transform/LayerNorm")
        logits = tf.matmul(x, self.var("bert/embeddings/word_embeddings"), transpose_b=True)
        return tf.nn.bias_add(logits, self.var("cls/predictions/output_bias"))

    def sop_log_probs(self, pooled):  # export_to_tfhub.get_sop_log_probs
        logits = tf.matmul(pooled, self.var("cls/seq_relationship/output_weights"),
                           transpose_b=True)
        return tf.nn.log_softmax(tf.nn.bias_add(logits, self.var("cls/seq_relationship/output_bias")))


def _signatures(config: AlbertConfig, values: dict, training: bool, asset_dir: str,
                do_lower_case: bool) -> tuple[_Graph, dict]:
    """The module function of export_to_tfhub.py, in the current default graph."""
    graph = _Graph(config, values, training)
    names = ("input_ids", "input_mask", "segment_ids", "mlm_positions")
    ids, mask, segments, positions = (v1.placeholder(tf.int32, [None, None], n) for n in names)
    sequence, pooled = graph.encoder(ids, mask, segments)
    mlm_logits = graph.mlm_logits(sequence, positions)
    sop_log_probs = graph.sop_log_probs(pooled)
    assets = {}
    for filename, name in zip(ASSET_FILES, ("config_file", "vocab_model", "vocab_file")):
        assets[name] = tf.constant(os.path.join(asset_dir, filename), name=name)
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, assets[name])
    info = v1.saved_model.build_tensor_info
    inputs = {"input_ids": info(ids), "input_mask": info(mask), "segment_ids": info(segments)}
    tokens = {"sequence_output": info(sequence), "pooled_output": info(pooled)}
    build = v1.saved_model.signature_def_utils.build_signature_def
    return graph, {
        "tokens": build(inputs, tokens),
        "sop": build(inputs, {**tokens, "sop_log_probs": info(sop_log_probs)}),
        "mlm": build({**inputs, "mlm_positions": info(positions)},
                     {**tokens, "mlm_logits": info(mlm_logits)}),
        "tokenization_info": build({}, {
            "vocab_file": info(assets["vocab_model"]),
            "do_lower_case": info(tf.constant(do_lower_case, name="do_lower_case"))}),
    }


def _as_hub_stores_assets(path: str) -> None:
    """Moves the Builder's asset records into tensorflow_hub's form: AssetFileDefs in the
    `saved_model_assets` collection, the asset Consts' paths replaced by `SAVEDMODEL-ASSET`
    (saved_model_lib._make_assets_key_collection)."""
    proto_file = os.path.join(path, "saved_model.pb")
    saved_model = saved_model_pb2.SavedModel()
    with open(proto_file, "rb") as f:
        saved_model.ParseFromString(f.read())
    for meta_graph in saved_model.meta_graphs:
        nodes = {node.name: node for node in meta_graph.graph_def.node}
        collection = meta_graph.collection_def["saved_model_assets"].any_list
        for tensor in meta_graph.collection_def["asset_filepaths"].node_list.value:
            node = nodes[tensor.split(":")[0]]
            asset = meta_graph_pb2.AssetFileDef(filename=os.path.basename(
                node.attr["value"].tensor.string_val[0].decode()))
            asset.tensor_info.name = tensor
            collection.value.add().Pack(asset)
            node.attr["value"].tensor.string_val[0] = b"SAVEDMODEL-ASSET"
        del meta_graph.asset_file_def[:]
    with open(proto_file, "wb") as f:
        f.write(saved_model.SerializeToString())


def write_tf1_hub_module(path: str, config: AlbertConfig, checkpoint: str,
                         spm_model_file: str | None = None, do_lower_case: bool = True,
                         config_asset: bool = True) -> str:
    """Writes the TF1 Hub module of the original checkpoint `checkpoint` (prefix) to `path`.

    `spm_model_file`: the SentencePiece model (default: placeholder bytes); `config_asset`:
    False leaves `assets/albert_config.json` out (the module then needs a config file)."""
    reader = tf.train.load_checkpoint(checkpoint)
    values = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
              if n != "global_step"}
    staging = path + ".files"  # the files the module's asset Consts name at export time
    os.makedirs(staging, exist_ok=True)
    config.to_json_file(os.path.join(staging, "albert_config.json"))
    if spm_model_file:
        shutil.copyfile(spm_model_file, os.path.join(staging, "30k-clean.model"))
    else:
        with open(os.path.join(staging, "30k-clean.model"), "wb") as f:
            f.write(b"sentencepiece model bytes")
    with open(os.path.join(staging, "30k-clean.vocab"), "w") as f:
        f.write("<pad>\t0\n")
    builder = v1.saved_model.Builder(path)
    for tags, training in (([], False), (["train"], True)):
        with tf.Graph().as_default():
            graph, signatures = _signatures(config, values, training, staging, do_lower_case)
            if not tags:
                with v1.Session() as session:
                    session.run(v1.global_variables_initializer())
                    for name, variable in graph.variables.items():
                        variable.load(values[name], session)
                    assert sorted(graph.variables) == sorted(values), "unused checkpoint names"
                    builder.add_meta_graph_and_variables(session, tags, signatures)
            else:
                builder.add_meta_graph(tags, signatures)
    builder.save()
    _as_hub_stores_assets(path)
    os.makedirs(os.path.join(path, "assets"), exist_ok=True)
    for filename in ASSET_FILES:
        if config_asset or filename != "albert_config.json":
            shutil.copyfile(os.path.join(staging, filename), os.path.join(path, "assets", filename))
    shutil.rmtree(staging)
    with open(os.path.join(path, "tfhub_module.pb"), "wb") as f:
        f.write(MODULE_DEF_V3)
    return path


def run_signature(path: str, signature: str, inputs: dict[str, np.ndarray],
                  tags: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The module's own `signature` (MetaGraph `tags`) on `inputs`, in a tf.compat.v1 Session."""
    with tf.Graph().as_default(), v1.Session() as session:
        meta_graph = v1.saved_model.loader.load(session, list(tags), path)
        definition = meta_graph.signature_def[signature]
        feeds = {definition.inputs[k].name: v for k, v in inputs.items()}
        names = {k: t.name for k, t in definition.outputs.items()}
        return session.run(names, feeds)
