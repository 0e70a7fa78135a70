"""--init_checkpoint: warm start from an original TF1 checkpoint, a Hugging Face directory or
one of ours (faithfulness §3.5), through `checkpoints.load_checkpoint`.

Only model weights are read; optimizer slots and the step start fresh, as the original.
`init_from_group0` gives every transformer group the weights of group 0 when the checkpoint
lacks them, which is what the original intends. Fixed on the way: Q14 (the original reads
`net_structure_type`, absent from most configs; it only chose the sub-map count, which we do
not need) and Q34 (the original restores only the last group's attention/FFN weights while
logging all of them as restored).
"""

from __future__ import annotations

from typing import Any, Sequence

import keras
from absl import logging

from albert_tf import checkpoints


def glob_escape(name: str) -> str:
    """`name` as an fnmatch pattern matching only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _encoder(model: keras.Model) -> Any:
    return model if hasattr(model, "transformer") else model.encoder


def copy_group0_to_missing(model: keras.Model, missing_variable_ids: set[int]) -> list[str]:
    """Copies layer 0's attention/FFN weights of inner block k into every other sublayer of
    inner block k whose weights were not restored. Returns the sublayer names filled."""
    encoder = _encoder(model)
    stack = encoder.transformer
    filled = []
    for k in range(encoder.config.inner_group_num):
        source_attention, source_ffn = stack.schedule[k]  # layer 0, inner block k
        pairs = [(stack.attention_layers, stack.attention_scopes, source_attention),
                 (stack.feed_forward_layers, stack.feed_forward_scopes, source_ffn)]
        for layers, scopes, source_index in pairs:
            source = layers[source_index]
            for index, (layer, scope) in enumerate(zip(layers, scopes)):
                if index == source_index or not scope.endswith(f"inner_group_{k}"):
                    continue
                if not any(id(w) in missing_variable_ids for w in layer.trainable_weights):
                    continue
                for target, value in zip(layer.trainable_weights, source.trainable_weights):
                    target.assign(value)
                filled.append(layer.name)
    return filled


def other_group_names(model: keras.Model, kind: str) -> list[str]:
    """Names (in the format of `kind`) of the attention/FFN weights outside group 0: those
    init_from_group0 fills, so the checkpoint may lack them."""
    stack = _encoder(model).transformer
    layers = [layer for scopes, group in ((stack.attention_scopes, stack.attention_layers),
                                          (stack.feed_forward_scopes, stack.feed_forward_layers))
              for scope, layer in zip(scopes, group) if not scope.startswith("group_0/")]
    ids = {id(w) for layer in layers for w in layer.weights}
    return [name for name, variable in checkpoints.named_variables(model, kind).items()
            if id(variable) in ids]


def warm_start(model: keras.Model, path: str, init_from_group0: bool = False,
               allow_missing: Sequence[str] = (), dry_run: bool = False) -> None:
    """Loads model weights from `path` (original TF1, Hugging Face or ours), logging each.

    Args:
        model: AlbertPretrainer or a task model with `.encoder`.
        path: checkpoint prefix, a directory (its latest checkpoint) or an HF directory.
        init_from_group0: groups absent from the checkpoint start from group 0 (§3.5).
        allow_missing: model parts / name globs an original or HF checkpoint may lack (e.g.
            a fine-tuning head); our checkpoints always allow missing variables (logged).
        dry_run: compare names and shapes only (the same errors); assign nothing.
    """
    kind = checkpoints.checkpoint_kind(path)
    allow = list(allow_missing) if kind != "tf2" else ["*"]
    if init_from_group0:
        allow += [glob_escape(n) for n in other_group_names(model, kind)]
    if dry_run:
        checkpoints.validate_checkpoint(model, path, allow_missing=allow)
        return
    report = checkpoints.load_checkpoint(model, path, allow_missing=allow)
    missing_ids = {id(report.targets[n]) for n in report.missing}
    if init_from_group0:
        filled = copy_group0_to_missing(model, missing_ids)
        logging.info("init_from_group0: %s", ", ".join(filled) if filled else
                     "every group was in the checkpoint; nothing copied")
