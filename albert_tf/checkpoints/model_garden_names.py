"""Model Garden's ALBERT variable names ↔ the original's (faithfulness §11.4).

The names are those of its TF2 Hub exports' variables (`AlbertEncoder` layers, and the
`BertPretrainerV2` masked-LM head of a with_mlm export), the inverse of
`tf2_albert_encoder_checkpoint_converter.ALBERT_NAME_REPLACEMENTS`. One shared transformer
block: Model Garden's AlbertEncoder has one group of one layer. Its attention kernels are split
by head (`[H, heads, head_size]`, output `[heads, head_size, H]`), the original's are not; a
value is reshaped, never permuted (the converter's ALBERT permutations are none).
"""

from __future__ import annotations

import numpy as np

SCOPE = "bert/encoder/transformer/group_0/inner_group_0"
# Model Garden name → original name.
NAMES: dict[str, str] = {
    "word_embeddings/embeddings": "bert/embeddings/word_embeddings",
    "position_embedding/embeddings": "bert/embeddings/position_embeddings",
    "type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
    "embeddings/layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
    "embeddings/layer_norm/beta": "bert/embeddings/LayerNorm/beta",
    "embedding_projection/kernel": "bert/encoder/embedding_hidden_mapping_in/kernel",
    "embedding_projection/bias": "bert/encoder/embedding_hidden_mapping_in/bias",
    **{f"transformer/self_attention/{n}/{w}": f"{SCOPE}/attention_1/self/{n}/{w}"
       for n in ("query", "key", "value") for w in ("kernel", "bias")},
    "transformer/self_attention/attention_output/kernel":
        f"{SCOPE}/attention_1/output/dense/kernel",
    "transformer/self_attention/attention_output/bias": f"{SCOPE}/attention_1/output/dense/bias",
    "transformer/self_attention_layer_norm/gamma": f"{SCOPE}/LayerNorm/gamma",
    "transformer/self_attention_layer_norm/beta": f"{SCOPE}/LayerNorm/beta",
    "transformer/intermediate/kernel": f"{SCOPE}/ffn_1/intermediate/dense/kernel",
    "transformer/intermediate/bias": f"{SCOPE}/ffn_1/intermediate/dense/bias",
    "transformer/output/kernel": f"{SCOPE}/ffn_1/intermediate/output/dense/kernel",
    "transformer/output/bias": f"{SCOPE}/ffn_1/intermediate/output/dense/bias",
    "transformer/output_layer_norm/gamma": f"{SCOPE}/LayerNorm_1/gamma",
    "transformer/output_layer_norm/beta": f"{SCOPE}/LayerNorm_1/beta",
    "pooler_transform/kernel": "bert/pooler/dense/kernel",
    "pooler_transform/bias": "bert/pooler/dense/bias",
    # BertPretrainerV2's MaskedLM (its embedding table is the word embeddings).
    "bert/cls/predictions/transform/dense/kernel": "cls/predictions/transform/dense/kernel",
    "bert/cls/predictions/transform/dense/bias": "cls/predictions/transform/dense/bias",
    "bert/cls/predictions/transform/LayerNorm/gamma": "cls/predictions/transform/LayerNorm/gamma",
    "bert/cls/predictions/transform/LayerNorm/beta": "cls/predictions/transform/LayerNorm/beta",
    "bert/cls/predictions/output_bias/bias": "cls/predictions/output_bias",
}
QUERY_KERNEL = "transformer/self_attention/query/kernel"
MLM_BIAS = "bert/cls/predictions/output_bias/bias"


def original_shape(name: str, shape: list[int]) -> list[int]:
    """The original's shape of a Model Garden variable: head splits merged."""
    if name == "transformer/self_attention/attention_output/kernel" and len(shape) == 3:
        return [shape[0] * shape[1], shape[2]]
    if name.startswith("transformer/self_attention/") and len(shape) == 3:
        return [shape[0], shape[1] * shape[2]]
    if name.startswith("transformer/self_attention/") and name.endswith("/bias") \
            and len(shape) == 2:
        return [shape[0] * shape[1]]
    return list(shape)


def to_original(name: str, value: np.ndarray) -> np.ndarray:
    """A Model Garden value in the original's layout."""
    return np.reshape(value, original_shape(name, list(value.shape)))
