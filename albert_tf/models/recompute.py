"""Gradient recomputation switched on across a model: the transformer stacks that offer it
recompute their block activations in the backward pass (less memory, more time).

`--recompute_grad` of every run_* script: the loop calls `enable_recompute` on the model it
built (`albert_tf.layers.transformer`'s `recompute_grad`, a runtime switch not saved in
checkpoints).
"""

from __future__ import annotations

import keras


def enable_recompute(model: keras.Model) -> int:
    """Sets `recompute_grad = True` on every layer of `model` (nested models included)
    that has that attribute (AlbertEncoder's transformer stack); returns how many.

    Raises ValueError when no layer offers recomputation.
    """
    def walk(layer):
        for child in getattr(layer, "layers", ()):
            yield child
            yield from walk(child)

    stacks = {id(layer): layer for layer in walk(model) if hasattr(layer, "recompute_grad")}
    if not stacks:
        raise ValueError(f"recompute_grad: no layer of {model.name} supports recomputation "
                         "(an encoder loaded from a SavedModel/TF-Hub export cannot)")
    for layer in stacks.values():
        layer.recompute_grad = True
    return len(stacks)
