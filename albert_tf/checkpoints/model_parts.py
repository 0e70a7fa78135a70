"""The parts of a model that checkpoint tables name: where each part's layer lives.

A table row says (part, file name, attribute path from the part's layer). `part_owners`
finds, for a built model, the layer of every part it has: the encoder's embeddings,
projection, attention/FFN sublayers (with their scope `group_{g}/inner_group_{k}` or
`layer_{i}/inner_group_{k}`) and pooler, and the heads the root model owns.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

# Parts of the encoder, then the heads a root model may own (attribute names of the model).
ENCODER_PARTS = ("embeddings", "projection", "attention", "ffn", "pooler")
HEAD_PARTS = ("mlm_head", "sop_head", "classifier_head", "squad_v1_head", "squad_v2_head")
# Encoder parts a task model has but never reads: the span labeler's outputs do not depend on
# the pooler (HF's AlbertForQuestionAnswering file has none).
UNREAD_PARTS = {"AlbertSpanLabeler": ("pooler",)}


def resolve(owner: Any, path: str) -> tf.Variable:
    """The variable at a dotted attribute path, e.g. `layer_norm.gamma`."""
    obj = owner
    for attribute in path.split("."):
        obj = getattr(obj, attribute)
    return obj


def encoder_of(model: Any) -> Any:
    """The AlbertEncoder of a model (the model itself when it is one)."""
    from albert_tf.models.encoder import AlbertEncoder

    if isinstance(model, AlbertEncoder):
        return model
    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, AlbertEncoder):
        raise TypeError(f"{type(model).__name__} is not an AlbertEncoder and has no .encoder")
    return encoder


def part_owners(model: Any) -> dict[str, list[tuple[str, Any]]]:
    """For each part present in `model`: (scope, layer) pairs the table rows resolve against."""
    encoder = encoder_of(model)
    stack = encoder.transformer
    owners: dict[str, list[tuple[str, Any]]] = {
        "embeddings": [("", encoder.embedding_layer)],
        "attention": list(zip(stack.attention_scopes, stack.attention_layers)),
        "ffn": list(zip(stack.feed_forward_scopes, stack.feed_forward_layers)),
        "pooler": [("", encoder.pooler)],
    }
    if encoder.embedding_projection is not None:
        owners["projection"] = [("", encoder.embedding_projection)]
    for part in HEAD_PARTS:
        head = getattr(model, part, None)
        if head is not None and model is not encoder:
            owners[part] = [("", head)]
    return owners


def unread_parts(model: Any) -> tuple[str, ...]:
    """The encoder parts `model` holds but whose weights never reach its outputs."""
    return UNREAD_PARTS.get(type(model).__name__, ())


def check_built(layer: Any) -> None:
    if not layer.built:
        raise ValueError(f"layer {layer.name} is not built; call the model once first")
