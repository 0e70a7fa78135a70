"""The one warm start: `--init_checkpoint` (or an export's `--checkpoint`) into any model.

Faithfulness §3.5, §8.1 `init_checkpoint`: an original TF1 checkpoint, a Hugging Face
directory (strict name maps) or one of ours (by variable path) is loaded through
`load_checkpoint` into an AlbertEncoder, the pretrainer or a task model. One rule for every
format and caller: every variable the model reads must come from the checkpoint except the
`optional` parts (a fine-tuning head, the MLM/SOP heads an encoder export leaves out), and the
log states the counts in the same words for every task — the original's most reported
failure is a fine-tune that silently started from random weights.

Only model weights are read; optimizer slots and the step start fresh, as the original.
`init_from_group0` gives every transformer group the weights of group 0 when the checkpoint
lacks them, which is what the original intends. Fixed on the way: Q14 (the original reads
`net_structure_type`, absent from most configs; it only chose the sub-map count, which we do
not need) and Q34 (the original restores only the last group's attention/FFN weights while
logging all of them as restored).

Example:
    >>> report = warm_start(AlbertClassifier(config, 2), "albert_base/model.ckpt",
    ...                     optional=head_parts(classifier))
    >>> report.encoder_restored == report.encoder_total
    True
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from absl import logging

from albert_tf.checkpoints.kinds import KIND_NAMES, checkpoint_kind
from albert_tf.checkpoints.loading import load_checkpoint, named_variables, validate_checkpoint
from albert_tf.checkpoints.model_parts import HEAD_PARTS, encoder_of, part_owners, unread_parts
from albert_tf.checkpoints.ours import part_patterns
from albert_tf.checkpoints.report import CheckpointMismatchError, matches


def head_parts(model: Any) -> list[str]:
    """The model's head parts: the checkpoint tables' head names it has as attributes."""
    return [part for part in HEAD_PARTS if getattr(model, part, None) is not None]


@dataclasses.dataclass
class RestoreReport:
    """What a warm start restored: counts of encoder and head variables, names missing."""

    path: str
    kind: str  # how logs name the format (`kinds.KIND_NAMES`)
    encoder_restored: int
    encoder_total: int
    head_restored: int
    head_total: int
    missing: list[str]
    heads: tuple[str, ...] = ("classifier_head",)
    # Missing names of encoder parts the model never reads (the span labeler's pooler).
    unread_missing: list[str] = dataclasses.field(default_factory=list)
    model_name: str = ""

    def summary(self) -> str:
        head = " + ".join(part.replace("_", "-") for part in self.heads) or "head"
        text = (f"restored {self.encoder_restored}/{self.encoder_total} encoder variables and "
                f"{self.head_restored}/{self.head_total} {head} variables from "
                f"{self.kind} checkpoint {self.path}")
        if self.missing:
            text += f"; left as initialised: {', '.join(self.missing)}"
        if self.unread_missing:
            text += (f"; not in the checkpoint and never read by {self.model_name}: "
                     f"{', '.join(self.unread_missing)}")
        return text


def glob_escape(name: str) -> str:
    """`name` as an fnmatch pattern matching only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def copy_group0_to_missing(model: Any, missing_variable_ids: set[int]) -> list[str]:
    """Copies layer 0's attention/FFN weights of inner block k into every other sublayer of
    inner block k whose weights were not restored. Returns the sublayer names filled."""
    encoder = encoder_of(model)
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


def other_group_names(model: Any, kind: str) -> list[str]:
    """Names (in the format of `kind`) of the attention/FFN weights outside group 0: those
    init_from_group0 fills, so the checkpoint may lack them."""
    stack = encoder_of(model).transformer
    layers = [layer for scopes, group in ((stack.attention_scopes, stack.attention_layers),
                                          (stack.feed_forward_scopes, stack.feed_forward_layers))
              for scope, layer in zip(scopes, group) if not scope.startswith("group_0/")]
    ids = {id(w) for layer in layers for w in layer.weights}
    return [name for name, variable in named_variables(model, kind).items()
            if id(variable) in ids]


def _unread_ids(model: Any) -> set[int]:
    """ids of the variables of encoder parts the model never reads (`unread_parts`)."""
    owners = part_owners(model)
    return {id(w) for part in unread_parts(model)
            for _, layer in owners.get(part, ()) for w in layer.weights}


def warm_start(model: Any, path: str, optional: Sequence[str] = (), *,
               init_from_group0: bool = False, dry_run: bool = False) -> RestoreReport:
    """Loads `path` (original TF1, Hugging Face or ours) into a built model; returns the counts.

    Args:
        model: AlbertEncoder, AlbertPretrainer or a task model with `.encoder`.
        path: checkpoint prefix, a directory (its latest checkpoint) or an HF directory.
        optional: parts (`head_parts(model)` for a fine-tune) or name globs in the format's
            own naming that the checkpoint may lack; they keep their initialisation.
        init_from_group0: groups absent from the checkpoint start from group 0 (§3.5).
        dry_run: compare names and shapes only (the same errors); assign nothing, log nothing.
    Raises:
        CheckpointMismatchError naming every missing (not optional), unused and mis-shaped
        variable; CheckpointFileError / FileNotFoundError for an unreadable path.
    """
    kind = checkpoint_kind(path)
    allow = list(optional) + list(unread_parts(model))
    if init_from_group0:
        allow += [glob_escape(n) for n in other_group_names(model, kind)]
    load = validate_checkpoint if dry_run else load_checkpoint
    encoder_ids = {id(v) for v in encoder_of(model).trainable_variables}
    if kind == "ours":  # the same rule, said in the words of a path-keyed checkpoint
        report = load(model, path, allow_missing=["*"], kind=kind)
        lacking = [n for n in report.missing if not matches(n, part_patterns(allow))]
        if lacking or not report.restored:
            what = ("encoder" if all(id(report.targets[n]) in encoder_ids for n in lacking)
                    else "model")
            raise CheckpointMismatchError(
                f"{report.path}: checkpoint lacks {len(lacking)} {what} variable(s): "
                f"{', '.join(lacking) or '(all)'}")
    else:
        report = load(model, path, allow_missing=allow, kind=kind)
    unread_ids = _unread_ids(model)
    heads = head_parts(model)
    # Each variable counted once, under the part that owns it: the tied MLM head also
    # references the encoder's embedding tables, which are encoder variables.
    head_ids = {id(v) for part in heads
                for v in getattr(model, part).trainable_variables} - encoder_ids
    restored_ids = {id(report.targets[n]) for n in report.restored}
    result = RestoreReport(
        report.path, KIND_NAMES[kind], len(restored_ids & encoder_ids), len(encoder_ids),
        len(restored_ids & head_ids), len(head_ids),
        [n for n in report.missing if id(report.targets[n]) not in unread_ids], tuple(heads),
        [n for n in report.missing if id(report.targets[n]) in unread_ids], type(model).__name__)
    if dry_run:
        return result
    if init_from_group0:
        filled = copy_group0_to_missing(model, {id(report.targets[n]) for n in report.missing})
        logging.info("init_from_group0: %s", ", ".join(filled) if filled else
                     "every group was in the checkpoint; nothing copied")
    logging.info("Warm start: %s", result.summary())
    return result
