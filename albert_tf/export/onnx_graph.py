"""The ALBERT encoder as an ONNX graph, built node by node from a Keras model's weights.

    >>> model = build_onnx_encoder(encoder)          # onnx.ModelProto, opset 17
    >>> onnx.save(model, "albert_encoder.onnx")

Inputs `input_word_ids`, `input_mask`, `input_type_ids`: int32 `[batch, seq]`, both dims
dynamic; outputs float32 `sequence_output` `[batch, seq, H]` and `pooled_output` `[batch, H]`.
The graph computes what `AlbertEncoder` computes at inference (faithfulness §2): the factorized
embedding (word + type + position rows, LayerNorm ε 1e-12, E→H projection where the model has
one), then the block schedule of the shared stack — each distinct attention / feed-forward
sublayer's weights are one initializer each, read by every application (12 for ALBERT-base), so
the file is as small as the checkpoint — with the −10000 additive mask, softmax, post-LayerNorm
residuals and the config's `hidden_act`, and the pooler tanh(dense(first token)).

The node patterns are those ONNX Runtime's transformer optimizer recognises (BERT's attention
with `Reshape [0, 0, N, D]`, the mask `Mul(Sub(1, Cast(Unsqueeze(Unsqueeze(mask)))), −10000)`
computed once, `Add → LayerNormalization` residuals, tanh-GELU as `Pow … Tanh … Mul`), so
`onnx_artifacts.quantize_int8` fuses them; the plain graph runs on any ONNX engine. Weights are
float32 whatever the model's compute dtype (a bf16 export's variables are float32).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from albert_tf.layers.activations import ACTIVATION_NAMES
from albert_tf.layers.attention import MASK_ADDER
from albert_tf.layers.normalization import LAYER_NORM_EPSILON
from albert_tf.models.encoder import INPUT_NAMES, AlbertEncoder

ONNX_OPSET = 17  # LayerNormalization is a standard op from 17
OUTPUT_NAMES = ("sequence_output", "pooled_output")
# hidden_act names the builder writes (all of ACTIVATION_NAMES, checked at import below).
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")
assert set(ACTIVATION_NAMES) <= set(SUPPORTED_ACTIVATIONS), ACTIVATION_NAMES


class OnnxBuildError(ValueError):
    """The model holds something this builder does not write (one line naming it)."""


def _numpy(variable: Any) -> np.ndarray:
    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable,
                      dtype=np.float32)


class _GraphBuilder:
    """Collects nodes and initializers; names are unique by a running counter."""

    def __init__(self):
        import onnx

        self.onnx = onnx
        self.helper = onnx.helper
        self.nodes: list = []
        self.initializers: list = []
        self._constants: dict[tuple, str] = {}
        self._count = 0

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_{self._count}"

    def weight(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.onnx.numpy_helper.from_array(
            np.array(value, order="C"), name))
        return name

    def constant(self, value: Any, dtype: Any = np.float32) -> str:
        """A (deduplicated) constant initializer: scalars are rank 0, lists rank 1."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self.weight(self._name("const"), array)
        return self._constants[key]

    def op(self, op_type: str, inputs: list[str], prefix: str | None = None, **attrs: Any
           ) -> str:
        output = self._name(prefix or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, inputs, [output],
                                                name=f"{output}_node", **attrs))
        return output

    def layer_norm(self, x: str, layer: Any, prefix: str) -> str:
        gamma = self.weight(f"{prefix}/gamma", _numpy(layer.gamma))
        beta = self.weight(f"{prefix}/beta", _numpy(layer.beta))
        return self.op("LayerNormalization", [x, gamma, beta], f"{prefix}_out", axis=-1,
                       epsilon=float(layer.epsilon))

    def dense(self, x: str, kernel: str, bias: str) -> str:
        return self.op("Add", [self.op("MatMul", [x, kernel]), bias])

    def activation(self, x: str, name: str) -> str:
        if name == "gelu":  # the original's tanh approximation (faithfulness Q1)
            cube = self.op("Pow", [x, self.constant(3.0)])
            inner = self.op("Add", [x, self.op("Mul", [cube, self.constant(0.044715)])])
            tanh = self.op("Tanh", [self.op("Mul", [inner,
                                                    self.constant(math.sqrt(2.0 / math.pi))])])
            half = self.op("Mul", [x, self.constant(0.5)])
            return self.op("Mul", [half, self.op("Add", [tanh, self.constant(1.0)])])
        if name == "gelu_exact":
            erf = self.op("Erf", [self.op("Div", [x, self.constant(math.sqrt(2.0))])])
            scaled = self.op("Mul", [x, self.op("Add", [erf, self.constant(1.0)])])
            return self.op("Mul", [scaled, self.constant(0.5)])
        if name == "relu":
            return self.op("Relu", [x])
        if name == "tanh":
            return self.op("Tanh", [x])
        return x  # linear


def _layer_weights(builder: _GraphBuilder, layer: Any, prefix: str) -> dict[str, str]:
    """Initializers of an attention or feed-forward sublayer, named after its Keras path."""
    names: dict[str, str] = {}
    for attr in ("query", "key", "value", "output_dense", "intermediate"):
        dense = getattr(layer, attr, None)
        if dense is not None:
            names[attr] = (builder.weight(f"{prefix}/{attr}/kernel", _numpy(dense.kernel)),
                           builder.weight(f"{prefix}/{attr}/bias", _numpy(dense.bias)))
    names["layer_norm"] = (builder.weight(f"{prefix}/layer_norm/gamma",
                                          _numpy(layer.layer_norm.gamma)),
                           builder.weight(f"{prefix}/layer_norm/beta",
                                          _numpy(layer.layer_norm.beta)))
    return names


def _check_supported(encoder: AlbertEncoder) -> str:
    """The activation name to write; OnnxBuildError for what the builder cannot represent."""
    act = encoder.config.hidden_act
    if not isinstance(act, str) or act.lower() not in SUPPORTED_ACTIVATIONS:
        raise OnnxBuildError(f"hidden_act {act!r}: the ONNX builder writes only "
                             f"{', '.join(SUPPORTED_ACTIVATIONS)}")
    for layer in (encoder.transformer.attention_layers + encoder.transformer.feed_forward_layers
                  + [encoder.embedding_layer]):
        epsilon = layer.layer_norm.epsilon
        if not math.isclose(epsilon, LAYER_NORM_EPSILON, rel_tol=1e-6):
            raise OnnxBuildError(f"{layer.name}: LayerNorm epsilon {epsilon}, expected "
                                 f"{LAYER_NORM_EPSILON}")
    return act.lower() or "linear"


def build_onnx_encoder(encoder: AlbertEncoder, name: str = "albert_encoder") -> Any:
    """The ONNX ModelProto of `encoder` at inference (see the module docstring)."""
    activation = _check_supported(encoder)
    config = encoder.config
    hidden, heads = config.hidden_size, config.num_attention_heads
    g = _GraphBuilder()
    helper, TensorProto = g.helper, g.onnx.TensorProto
    ids, mask, types = INPUT_NAMES

    # Embeddings: word + token type + positions 0..S-1, LayerNorm, then E→H.
    emb = encoder.embedding_layer
    word = g.weight("embeddings/word_embeddings", _numpy(emb.word_embeddings))
    type_table = g.weight("embeddings/token_type_embeddings", _numpy(emb.token_type_embeddings))
    positions = g.weight("embeddings/position_embeddings", _numpy(emb.position_embeddings))
    seq_len = g.op("Slice", [g.op("Shape", [ids]), g.constant([1], np.int64),
                             g.constant([2], np.int64)])
    position_rows = g.op("Slice", [positions, g.constant([0], np.int64), seq_len,
                                   g.constant([0], np.int64)])
    x = g.op("Add", [g.op("Add", [g.op("Gather", [word, ids]),
                                  g.op("Gather", [type_table, types])]), position_rows])
    x = g.layer_norm(x, emb.layer_norm, "embeddings/layer_norm")
    if encoder.embedding_projection is not None:
        proj = encoder.embedding_projection
        x = g.dense(x, g.weight("embedding_projection/kernel", _numpy(proj.kernel)),
                    g.weight("embedding_projection/bias", _numpy(proj.bias)))

    # The additive mask bias [B, 1, 1, S], once for every layer.
    unsqueezed = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, g.constant([1], np.int64)]),
                                    g.constant([2], np.int64)])
    as_float = g.op("Cast", [unsqueezed], to=TensorProto.FLOAT)
    mask_bias = g.op("Mul", [g.op("Sub", [g.constant(1.0), as_float]), g.constant(MASK_ADDER)],
                     "mask_bias")

    stack = encoder.transformer
    attention = [_layer_weights(g, layer, f"transformer/{scope}/attention")
                 for scope, layer in zip(stack.attention_scopes, stack.attention_layers)]
    feed_forward = [_layer_weights(g, layer, f"transformer/{scope}/ffn")
                    for scope, layer in zip(stack.feed_forward_scopes,
                                            stack.feed_forward_layers)]
    head_shape = g.constant([0, 0, heads, hidden // heads], np.int64)
    merged_shape = g.constant([0, 0, hidden], np.int64)
    # Div (not Mul by the inverse) keeps the mask's Mul the only Mul parent of the scores' Add,
    # which ORT's attention fusion needs; equal for power-of-two D (ALBERT's 64).
    scale = g.constant(math.sqrt(hidden // heads))
    for a, f in stack.schedule:
        w = attention[a]

        q, k, v = (g.op("Transpose", [g.op("Reshape", [g.dense(x, *w[name]), head_shape])],
                        perm=perm)
                   for name, perm in (("query", [0, 2, 1, 3]),
                                      ("key", [0, 2, 3, 1]),  # already transposed for Q·Kᵀ
                                      ("value", [0, 2, 1, 3])))
        scores = g.op("Div", [g.op("MatMul", [q, k]), scale])
        probs = g.op("Softmax", [g.op("Add", [scores, mask_bias])], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])],
                                        perm=[0, 2, 1, 3]), merged_shape])
        out = g.op("Add", [g.dense(context, *w["output_dense"]), x])
        x = g.op("LayerNormalization", [out, *w["layer_norm"]], axis=-1,
                 epsilon=LAYER_NORM_EPSILON)
        w = feed_forward[f]
        inner = g.activation(g.dense(x, *w["intermediate"]), activation)
        out = g.op("Add", [g.dense(inner, *w["output_dense"]), x])
        x = g.op("LayerNormalization", [out, *w["layer_norm"]], axis=-1,
                 epsilon=LAYER_NORM_EPSILON)
    g.nodes.append(helper.make_node("Identity", [x], ["sequence_output"],
                                    name="sequence_output_node"))

    pool = encoder.pooler.dense
    first = g.op("Gather", [x, g.constant(0, np.int64)], axis=1)
    pooled = g.dense(first, g.weight("pooler/dense/kernel", _numpy(pool.kernel)),
                     g.weight("pooler/dense/bias", _numpy(pool.bias)))
    g.nodes.append(helper.make_node("Tanh", [pooled], ["pooled_output"],
                                    name="pooled_output_node"))

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", "seq"])
              for n in INPUT_NAMES]
    outputs = [helper.make_tensor_value_info("sequence_output", TensorProto.FLOAT,
                                             ["batch", "seq", hidden]),
               helper.make_tensor_value_info("pooled_output", TensorProto.FLOAT,
                                             ["batch", hidden])]
    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                              producer_name="albert_tf")
    model.ir_version = 8  # readable by ONNX Runtime ≥ 1.10 and OpenVINO
    helper.set_model_props(model, {"max_seq_length": str(config.max_position_embeddings),
                                   "vocab_size": str(config.vocab_size),
                                   "type_vocab_size": str(config.type_vocab_size),
                                   "hidden_act": config.hidden_act})
    g.onnx.checker.check_model(model)
    return model
