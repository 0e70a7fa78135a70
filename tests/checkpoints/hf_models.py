"""Hugging Face ALBERT models with random weights, built by `transformers` (the independent side).

One random backbone per config shape is shared by every head class, so a shape costs one
set of random numbers; each class is saved with `save_pretrained` (safetensors).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from albert_tf import AlbertConfig

torch = pytest.importorskip("torch", reason="PyTorch (requirements-dev.txt) is not installed")
transformers = pytest.importorskip("transformers",
                                   reason="transformers (requirements-dev.txt) is not installed")
torch.set_num_threads(1)

HEAD_CLASSES = ("AlbertForPreTraining", "AlbertForMaskedLM", "AlbertForSequenceClassification",
                "AlbertForQuestionAnswering", "AlbertForMultipleChoice")
NUM_LABELS = 3


def hf_config(config: AlbertConfig, hidden_act: str = "gelu_new", **extra):
    """transformers.AlbertConfig of the same shape; eager attention for exact parity."""
    return transformers.AlbertConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, inner_group_num=config.inner_group_num,
        num_attention_heads=config.num_attention_heads, intermediate_size=config.intermediate_size,
        hidden_act=hidden_act, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0, max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, layer_norm_eps=1e-12, **extra)


def randomize(module, seed: int) -> None:
    """Every parameter ~ N(0, 0.1), LayerNorm weights around 1 (so nothing is trivially 0/1)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * 0.1
            parameter.copy_(noise + (1.0 if "LayerNorm.weight" in name or "layer_norm.weight" in name
                                     else 0.0))


def build(class_name: str, config, backbone=None, seed: int = 0, num_labels: int = NUM_LABELS):
    """An HF model of `class_name` (eval mode, eager attention), its backbone copied from
    `backbone` where present, everything else random."""
    kwargs = {"num_labels": num_labels} if class_name == "AlbertForSequenceClassification" else {}
    model_config = config.__class__(**{**config.to_dict(), **kwargs})
    model_config._attn_implementation = "eager"
    model = getattr(transformers, class_name)(model_config).eval()
    randomize(model, seed)
    if backbone is not None:
        model.albert.load_state_dict(backbone.state_dict(), strict=False)
    return model


def save_heads(config, directory: str, seed: int = 0) -> dict[str, tuple[object, str]]:
    """{HF class: (model, save_pretrained directory)} for every head class, one backbone."""
    backbone = build("AlbertModel", config, seed=seed)
    saved = {}
    for index, class_name in enumerate(HEAD_CLASSES):
        model = build(class_name, config, backbone, seed=seed + index + 1)
        path = os.path.join(directory, class_name)
        model.save_pretrained(path)
        saved[class_name] = (model, path)
    return saved


def torch_feed(inputs: dict[str, np.ndarray]) -> dict[str, object]:
    """HF keyword arguments from our input dict (ids, mask, segment ids)."""
    return {"input_ids": torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(inputs["input_type_ids"], dtype=torch.long)}
