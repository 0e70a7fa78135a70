"""--init_checkpoint: warm start from an original TF1 checkpoint or one of ours (spec §3.5).

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
from albert_tf.training.checkpointing import load_model_weights

# Original names of every transformer group but group 0: allowed to be missing under
# init_from_group0 (fnmatch; `[!0]` / `?*` cover group_1 … group_10 … but not group_0).
_OTHER_GROUPS = ("bert/encoder/transformer/group_[!0]*/*", "bert/encoder/transformer/group_0?*/*",
                 "bert/encoder/transformer/layer_*/*")


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


def warm_start(model: keras.Model, path: str, init_from_group0: bool = False,
               allow_missing: Sequence[str] = ()) -> None:
    """Loads model weights from `path` (original TF1 checkpoint or ours), logging each.

    Args:
        model: AlbertPretrainer or a task model with `.encoder`.
        path: checkpoint prefix, or a directory (its latest checkpoint).
        init_from_group0: groups absent from the checkpoint start from group 0 (§3.5).
        allow_missing: model parts / TF1 name globs an original checkpoint may lack (e.g.
            a fine-tuning head); our checkpoints always allow missing variables (logged).
    """
    if checkpoints.is_original_checkpoint(path):
        allow = list(allow_missing) + (list(_OTHER_GROUPS) if init_from_group0 else [])
        report = checkpoints.load_original_checkpoint(model, path, allow_missing=allow)
        names = checkpoints.variable_map(model)
        missing_ids = {id(names[n]) for n in report.missing}
    else:
        _, missing = load_model_weights(model, checkpoints.resolve_checkpoint_path(path))
        by_key = {getattr(v, "path", v.name): v for v in model.trainable_variables}
        missing_ids = {id(by_key[k]) for k in missing if k in by_key}
    if init_from_group0:
        filled = copy_group0_to_missing(model, missing_ids)
        logging.info("init_from_group0: %s", ", ".join(filled) if filled else
                     "every group was in the checkpoint; nothing copied")
