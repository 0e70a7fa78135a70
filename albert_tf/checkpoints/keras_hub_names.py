"""keras-hub ALBERT tensor names: one table onto our layers, and where Keras files put them.

A name is `<keras-hub layer name>/<sublayer path>/<variable index>`, e.g.
`group_1_inner_layer_0/_self_attention_layer/query_dense/0`: keras-hub's
`group_{g}_inner_layer_{k}` is the original's `group_{g}/inner_group_{k}` (ours with
cross_layer_sharing "all"), called `num_layers / num_groups` times in a row as the original.
Layouts: keras-hub's attention is `EinsumDense` — query/key/value kernels [H, heads, size],
biases [heads, size], the output kernel [heads, size, H] — the same numbers as our [H, H]
kernels reshaped (HEADS_*); Dense kernels are [in, out] like ours (AS_IS); the classifier's
`logits` kernel is [H, classes], our `output_weights` [classes, H] (TRANSPOSED).
"""

from __future__ import annotations

AS_IS = "as_is"
TRANSPOSED = "transposed"
HEADS_IN = "heads_in"  # ours [H, H] ↔ [H, heads, size]
HEADS_BIAS = "heads_bias"  # ours [H] ↔ [heads, size]
HEADS_OUT = "heads_out"  # ours [H, H] ↔ [heads, size, H]

SCOPE = "group_{group}_inner_layer_{inner}"
_ATTENTION = "{scope}/_self_attention_layer"

# (part, name template, attribute path from the part's layer, layout); parts as `model_parts`.
KERAS_HUB_NAME_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("embeddings", "token_embedding/0", "word_embeddings", AS_IS),
    ("embeddings", "position_embedding/0", "position_embeddings", AS_IS),
    ("embeddings", "segment_embedding/0", "token_type_embeddings", AS_IS),
    ("embeddings", "embeddings_layer_norm/0", "layer_norm.gamma", AS_IS),
    ("embeddings", "embeddings_layer_norm/1", "layer_norm.beta", AS_IS),
    ("projection", "embedding_projection/0", "kernel", AS_IS),
    ("projection", "embedding_projection/1", "bias", AS_IS),
    ("attention", _ATTENTION + "/query_dense/0", "query.kernel", HEADS_IN),
    ("attention", _ATTENTION + "/query_dense/1", "query.bias", HEADS_BIAS),
    ("attention", _ATTENTION + "/key_dense/0", "key.kernel", HEADS_IN),
    ("attention", _ATTENTION + "/key_dense/1", "key.bias", HEADS_BIAS),
    ("attention", _ATTENTION + "/value_dense/0", "value.kernel", HEADS_IN),
    ("attention", _ATTENTION + "/value_dense/1", "value.bias", HEADS_BIAS),
    ("attention", _ATTENTION + "/output_dense/0", "output_dense.kernel", HEADS_OUT),
    ("attention", _ATTENTION + "/output_dense/1", "output_dense.bias", AS_IS),
    ("attention", "{scope}/_self_attention_layer_norm/0", "layer_norm.gamma", AS_IS),
    ("attention", "{scope}/_self_attention_layer_norm/1", "layer_norm.beta", AS_IS),
    ("ffn", "{scope}/_feedforward_intermediate_dense/0", "intermediate.kernel", AS_IS),
    ("ffn", "{scope}/_feedforward_intermediate_dense/1", "intermediate.bias", AS_IS),
    ("ffn", "{scope}/_feedforward_output_dense/0", "output_dense.kernel", AS_IS),
    ("ffn", "{scope}/_feedforward_output_dense/1", "output_dense.bias", AS_IS),
    ("ffn", "{scope}/_feedforward_layer_norm/0", "layer_norm.gamma", AS_IS),
    ("ffn", "{scope}/_feedforward_layer_norm/1", "layer_norm.beta", AS_IS),
    ("pooler", "pooled_dense/0", "dense.kernel", AS_IS),
    ("pooler", "pooled_dense/1", "dense.bias", AS_IS),
    # AlbertTextClassifier (task.weights.h5): its `logits` Dense.
    ("classifier_head", "logits/0", "output_weights", TRANSPOSED),
    ("classifier_head", "logits/1", "output_bias", AS_IS),
)
PROJECTION_NAMES = ("embedding_projection/0", "embedding_projection/1")
HEAD_NAMES = ("logits/0", "logits/1")
# Groups of task.weights.h5 that are no weights of the model (the compiled optimizer's state,
# the preprocessor's).
TASK_SKIPPED_ROOTS = ("optimizer", "preprocessor")
# The backbone's layers as the functional model lists them: (class name in snake case, layer
# name); the transformer layers come between the projection and the pooler.
_BACKBONE_LAYERS_BEFORE = (
    ("input_layer", "token_ids"), ("input_layer", "segment_ids"), ("input_layer", "padding_mask"),
    ("reversible_embedding", "token_embedding"), ("position_embedding", "position_embedding"),
    ("embedding", "segment_embedding"), ("add", "embeddings_add"),
    ("layer_normalization", "embeddings_layer_norm"), ("dropout", "embeddings_dropout"),
    ("dense", "embedding_projection"))
_BACKBONE_LAYERS_AFTER = (("dense", "pooled_dense"),)
# The classifier's own layers in task.weights.h5 (the backbone is skipped there).
TASK_LAYER_PATHS = {"dense": "logits", "dropout": "output_dropout"}


def our_scope(group: int, inner: int) -> str:
    return f"group_{group}/inner_group_{inner}"


def keras_hub_scope(our: str) -> str:
    """`group_{g}/inner_group_{k}` → `group_{g}_inner_layer_{k}`."""
    group, inner = our.split("/")
    return SCOPE.format(group=group.split("_")[-1], inner=inner.split("_")[-1])


def backbone_layer_paths(num_groups: int, num_inner: int) -> dict[str, str]:
    """{top-level path in model.weights.h5: keras-hub layer name}: Keras numbers a class's
    layers `name`, `name_1`, … in the functional model's order."""
    layers = list(_BACKBONE_LAYERS_BEFORE)
    layers += [("transformer_encoder", SCOPE.format(group=g, inner=k))
               for g in range(num_groups) for k in range(num_inner)]
    layers += list(_BACKBONE_LAYERS_AFTER)
    counts: dict[str, int] = {}
    paths = {}
    for class_name, layer in layers:
        index = counts.get(class_name, 0)
        counts[class_name] = index + 1
        paths[class_name if index == 0 else f"{class_name}_{index}"] = layer
    return paths
