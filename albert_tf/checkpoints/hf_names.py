"""Hugging Face ALBERT parameter names: one table onto our layers, and the HF classes.

HF tensors follow PyTorch layouts: a `Linear` weight is [out, in], a Keras kernel [in, out],
so those rows are TRANSPOSED; LayerNorm weight/bias are our gamma/beta; the heads' weights
are [classes, H] like ours (`output_weights`), so they pass AS_IS. `{scope}` stands for
`albert.encoder.albert_layer_groups.{g}.albert_layers.{k}` — the original's
`group_{g}/inner_group_{k}` — so HF holds exactly the original's sharing (ours "all").
"""

from __future__ import annotations

import dataclasses
import re

from albert_tf.checkpoints.model_parts import HEAD_PARTS

AS_IS = "as_is"
TRANSPOSED = "transposed"

HF_SCOPE = "albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
OUR_SHARED_SCOPE = re.compile(r"group_(\d+)/inner_group_(\d+)")

# (part, HF name template, attribute path from the part's layer, layout). Parts as in
# `model_parts`; the names are those of the full models (`albert.` prefix).
HF_NAME_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("embeddings", "albert.embeddings.word_embeddings.weight", "word_embeddings", AS_IS),
    ("embeddings", "albert.embeddings.token_type_embeddings.weight", "token_type_embeddings",
     AS_IS),
    ("embeddings", "albert.embeddings.position_embeddings.weight", "position_embeddings", AS_IS),
    ("embeddings", "albert.embeddings.LayerNorm.weight", "layer_norm.gamma", AS_IS),
    ("embeddings", "albert.embeddings.LayerNorm.bias", "layer_norm.beta", AS_IS),
    ("projection", "albert.encoder.embedding_hidden_mapping_in.weight", "kernel", TRANSPOSED),
    ("projection", "albert.encoder.embedding_hidden_mapping_in.bias", "bias", AS_IS),
    ("attention", "{scope}.attention.query.weight", "query.kernel", TRANSPOSED),
    ("attention", "{scope}.attention.query.bias", "query.bias", AS_IS),
    ("attention", "{scope}.attention.key.weight", "key.kernel", TRANSPOSED),
    ("attention", "{scope}.attention.key.bias", "key.bias", AS_IS),
    ("attention", "{scope}.attention.value.weight", "value.kernel", TRANSPOSED),
    ("attention", "{scope}.attention.value.bias", "value.bias", AS_IS),
    ("attention", "{scope}.attention.dense.weight", "output_dense.kernel", TRANSPOSED),
    ("attention", "{scope}.attention.dense.bias", "output_dense.bias", AS_IS),
    ("attention", "{scope}.attention.LayerNorm.weight", "layer_norm.gamma", AS_IS),
    ("attention", "{scope}.attention.LayerNorm.bias", "layer_norm.beta", AS_IS),
    ("ffn", "{scope}.ffn.weight", "intermediate.kernel", TRANSPOSED),
    ("ffn", "{scope}.ffn.bias", "intermediate.bias", AS_IS),
    ("ffn", "{scope}.ffn_output.weight", "output_dense.kernel", TRANSPOSED),
    ("ffn", "{scope}.ffn_output.bias", "output_dense.bias", AS_IS),
    ("ffn", "{scope}.full_layer_layer_norm.weight", "layer_norm.gamma", AS_IS),
    ("ffn", "{scope}.full_layer_layer_norm.bias", "layer_norm.beta", AS_IS),
    ("pooler", "albert.pooler.weight", "dense.kernel", TRANSPOSED),
    ("pooler", "albert.pooler.bias", "dense.bias", AS_IS),
    # AlbertForPreTraining / AlbertForMaskedLM: `predictions` (the decoder is tied, below).
    ("mlm_head", "predictions.dense.weight", "dense.kernel", TRANSPOSED),
    ("mlm_head", "predictions.dense.bias", "dense.bias", AS_IS),
    ("mlm_head", "predictions.LayerNorm.weight", "layer_norm.gamma", AS_IS),
    ("mlm_head", "predictions.LayerNorm.bias", "layer_norm.beta", AS_IS),
    ("mlm_head", "predictions.bias", "output_bias", AS_IS),
    ("sop_head", "sop_classifier.classifier.weight", "output_weights", AS_IS),
    ("sop_head", "sop_classifier.classifier.bias", "output_bias", AS_IS),
    # AlbertForSequenceClassification and AlbertForMultipleChoice.
    ("classifier_head", "classifier.weight", "output_weights", AS_IS),
    ("classifier_head", "classifier.bias", "output_bias", AS_IS),
    # AlbertForQuestionAnswering: start and end logits, the original's SQuAD v1 head.
    ("squad_v1_head", "qa_outputs.weight", "output_weights", AS_IS),
    ("squad_v1_head", "qa_outputs.bias", "output_bias", AS_IS),
)

# Copies HF keeps of other tensors (the tied MLM decoder): name → the tensor it must equal.
# save_pretrained leaves them out; older files hold them.
HF_TIED = {
    "predictions.decoder.weight": "albert.embeddings.word_embeddings.weight",
    "predictions.decoder.bias": "predictions.bias",
}
# Entries that are never weights (a buffer older transformers versions saved).
HF_SKIPPED = ("albert.embeddings.position_ids",)
BASE_PREFIX = "albert."
POOLER_NAMES = ("albert.pooler.weight", "albert.pooler.bias")
PROJECTION_NAMES = ("albert.encoder.embedding_hidden_mapping_in.weight",
                    "albert.encoder.embedding_hidden_mapping_in.bias")


@dataclasses.dataclass(frozen=True)
class HFClass:
    """An HF ALBERT model class: the heads its file holds, whether it has the pooler, and
    tensors of its own that are no head of ours (read as unused)."""

    name: str
    heads: tuple[str, ...]
    has_pooler: bool = True
    foreign_tensors: tuple[str, ...] = ()


HF_CLASSES = {c.name: c for c in (
    HFClass("AlbertModel", ()),
    HFClass("AlbertForPreTraining", ("mlm_head", "sop_head")),
    HFClass("AlbertForMaskedLM", ("mlm_head",), has_pooler=False),
    HFClass("AlbertForSequenceClassification", ("classifier_head",)),
    HFClass("AlbertForMultipleChoice", ("classifier_head",)),
    HFClass("AlbertForQuestionAnswering", ("squad_v1_head",), has_pooler=False),
    # Per-token labels: its `classifier.*` is no head of ours, whatever the name says.
    HFClass("AlbertForTokenClassification", (), has_pooler=False,
            foreign_tensors=("classifier.weight", "classifier.bias")),
)}

# Heads without an HF counterpart, and why (used in errors).
NO_HF_EQUIVALENT = {
    "squad_v2_head": ("the SQuAD 2.0 head (start, conditioned end and answer-class logits) "
                      "has no Hugging Face equivalent: HF AlbertForQuestionAnswering is the "
                      "SQuAD v1 span head (start/end logits only)"),
}


def hf_scope(our_scope: str) -> str:
    """`group_{g}/inner_group_{k}` → HF's module path; per-layer scopes have none."""
    match = OUR_SHARED_SCOPE.fullmatch(our_scope)
    if match is None:
        raise ValueError(our_scope)
    return HF_SCOPE.format(group=match.group(1), inner=match.group(2))


def head_names(parts: tuple[str, ...] | None = None) -> list[str]:
    """HF names of the heads (all, or of `parts`)."""
    return [t for part, t, _, _ in HF_NAME_TABLE
            if part in HEAD_PARTS and (parts is None or part in parts)]
