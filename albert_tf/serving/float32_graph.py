"""A bfloat16 serving graph turned back into float32, for engines that choose their own precision.

A bfloat16 export's frozen `serving/` graph (serving_graph.py) holds float32 weight constants,
casts to bfloat16 and a few bfloat16 scalar constants (GELU's coefficients). OpenVINO's
TensorFlow reader has no bf16 element type (`OpConversionFailure … unknown element type bf16 …
Const`), and where it would read one, the casts would pin its precision and stop its fusions.
OpenVINO decides the inference precision itself when it compiles (INFERENCE_PRECISION_HINT):
given the float32 graph, it runs bf16 on a CPU with bf16 units — what `--openvino_ir` writes
from a float32 copy of the model. So every bf16 type in the graph becomes float32: constants
are widened (exactly: bf16 ⊂ float32), casts become float32 → float32 no-ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (  # no public equivalent
    convert_variables_to_constants_v2_as_graph)

from albert_tf.models.encoder import INPUT_NAMES

_BF16 = tf.bfloat16.as_datatype_enum
_F32 = tf.float32.as_datatype_enum


def _widen_node(node: Any) -> int:
    """Rewrites every bf16 type of one NodeDef to float32 in place; returns how many."""
    changed = 0
    for value in node.attr.values():
        if value.HasField("type") and value.type == _BF16:
            value.type = _F32
            changed += 1
        elif value.HasField("list") and _BF16 in value.list.type:
            value.list.type[:] = [_F32 if t == _BF16 else t for t in value.list.type]
            changed += 1
        elif value.HasField("tensor") and value.tensor.dtype == _BF16:
            array = tf.make_ndarray(value.tensor).astype(np.float32)
            value.tensor.CopyFrom(tf.make_tensor_proto(array, tf.float32))
            changed += 1
    return changed


def _rename_calls(node: Any, renamed: dict[str, str]) -> None:
    for value in node.attr.values():
        if value.HasField("func") and value.func.name in renamed:
            value.func.name = renamed[value.func.name]
        elif value.HasField("list"):
            for func in value.list.func:
                if func.name in renamed:
                    func.name = renamed[func.name]


def widen_bfloat16(graph_def: Any) -> int:
    """Every bf16 type of `graph_def` (its nodes and library functions) → float32, in place;
    returns the number of attributes changed. Library functions get new names (`…_float32`):
    the originals stay registered, unchanged, in TensorFlow's context."""
    changed = sum(_widen_node(node) for node in graph_def.node)
    renamed = {f.signature.name: f.signature.name + "_float32" for f in graph_def.library.function}
    for node in graph_def.node:
        _rename_calls(node, renamed)
    for function in graph_def.library.function:
        function.signature.name = renamed[function.signature.name]
        for node in function.node_def:
            changed += _widen_node(node)
            _rename_calls(node, renamed)
        for arg in list(function.signature.input_arg) + list(function.signature.output_arg):
            if arg.type == _BF16:
                arg.type = _F32
                changed += 1
    return changed


def float32_serving_function(saved_model_dir: str) -> tf.types.experimental.GenericFunction:
    """The `serving_default` signature of `saved_model_dir` as a tf.function whose graph
    computes in float32 (bf16 types widened), with the signature's input and output names."""
    signature = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
    frozen, graph_def = convert_variables_to_constants_v2_as_graph(signature,
                                                                   aggressive_inlining=True)
    widen_bfloat16(graph_def)
    inputs = [tensor.name for tensor in frozen.inputs]
    outputs = [tensor.name for tensor in frozen.outputs]
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.graph_util.import_graph_def(graph_def, name=""), [])
    pruned = wrapped.prune([wrapped.graph.as_graph_element(name) for name in inputs],
                           [wrapped.graph.as_graph_element(name) for name in outputs])
    specs = signature.structured_input_signature[1]
    # The frozen graph's placeholders carry the signature's input names.
    names = [tensor.name.split(":")[0] for tensor in frozen.inputs]
    if sorted(names) != sorted(INPUT_NAMES) or sorted(specs) != sorted(INPUT_NAMES):
        raise ValueError(f"{saved_model_dir}: inputs {sorted(specs)} are not "
                         f"{list(INPUT_NAMES)}")
    structure = signature.structured_outputs

    @tf.function(input_signature=[tf.TensorSpec(specs[name].shape, specs[name].dtype, name=name)
                                  for name in INPUT_NAMES])
    def serve(input_word_ids, input_mask, input_type_ids):
        given = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                 "input_type_ids": input_type_ids}
        return tf.nest.pack_sequence_as(structure, pruned(*[given[name] for name in names]))

    return serve
