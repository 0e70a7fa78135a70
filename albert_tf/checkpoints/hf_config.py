"""Hugging Face `config.json` (model_type "albert") ↔ the original's config keys.

Most keys have the same name and meaning in both worlds. The differences, stated once here:
* activation names: the original's "gelu" is the tanh approximation (Q1), which HF calls
  "gelu_new"; HF's "gelu" is the exact erf form, our "gelu_exact";
* HF always has the E→H projection `embedding_hidden_mapping_in`, the original only when
  E ≠ H: an HF config with E = H gets the extra key `embedding_projection: true`, which
  makes `AlbertEncoder` keep the projection;
* HF has no `cross_layer_sharing`: only "all" (the original's sharing) can be written;
* HF keys we cannot honour (another LayerNorm ε, relative position embeddings, untied
  decoder) are refused naming the field; head metadata (`num_labels`, `id2label`,
  `architectures`, `classifier_dropout_prob`, …) is not model shape and is not kept: our
  classifiers use dropout 0.1 whatever the config says (Q20).
`config_from_hf` / `config_to_hf` are the AlbertConfig side; `config_disagreement` is the
one check that a config file and an HF directory describe the same model.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from albert_tf.runtime import paths
from albert_tf.config import EMBEDDING_PROJECTION_KEY, AlbertConfig, ConfigError
from albert_tf.layers.normalization import LAYER_NORM_EPSILON

# HF `hidden_act` → ours. "gelu_new", "gelu_fast" and "gelu_pytorch_tanh" are all the tanh
# formula; "gelu" and "gelu_python" the erf one.
ACTIVATIONS_FROM_HF = {
    "gelu_new": "gelu", "gelu_fast": "gelu", "gelu_pytorch_tanh": "gelu",
    "gelu": "gelu_exact", "gelu_python": "gelu_exact",
    "relu": "relu", "tanh": "tanh", "linear": "linear",
}
# Ours → HF (lower-case names; our lookup is case-insensitive).
ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh",
                     "linear": "linear"}

# Keys with one name and meaning on both sides, with HF AlbertConfig's defaults (which are
# the original's constructor defaults; vocab_size has one only on the HF side).
SHARED_KEYS: dict[str, Any] = {
    "vocab_size": 30000, "embedding_size": 128, "hidden_size": 4096, "num_hidden_layers": 12,
    "num_hidden_groups": 1, "num_attention_heads": 64, "intermediate_size": 16384,
    "inner_group_num": 1, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
    "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
}
# The keys that decide a model's outputs from its weights (dropout and init do not).
ARCHITECTURE_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                     "num_hidden_groups", "num_attention_heads", "intermediate_size",
                     "inner_group_num", "hidden_act", "max_position_embeddings", "type_vocab_size")
HF_DEFAULT_ACTIVATION = "gelu_new"
# Keys a config file given beside an HF directory must agree on: every model key HF has.
COMPARED_KEYS = tuple(SHARED_KEYS) + ("hidden_act",)
# What we write for the keys HF needs and we do not model: the ids of <pad>, [CLS], [SEP]
# in the released 30k-clean SentencePiece model, and our classifier's fixed dropout (Q20).
WRITTEN_CONSTANTS = {"model_type": "albert", "layer_norm_eps": LAYER_NORM_EPSILON,
                     "classifier_dropout_prob": 0.1, "pad_token_id": 0, "bos_token_id": 2,
                     "eos_token_id": 3, "tie_word_embeddings": True}


class HFConfigError(ValueError):
    """A config value one side cannot represent (names the field)."""


def read_hf_config(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON of `config.json`, or of `path/config.json` for a model directory."""
    path = os.fspath(path)
    if paths.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        if not paths.isfile(path):
            raise FileNotFoundError(path)
        values = json.loads(paths.read_text(path))
    except FileNotFoundError:
        raise HFConfigError(f"{path}: not found (a Hugging Face model directory needs "
                            "config.json)") from None
    except json.JSONDecodeError as e:
        raise HFConfigError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(values, dict):
        raise HFConfigError(f"{path}: expected a JSON object, got {type(values).__name__}")
    return values


def values_from_hf(hf: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Our config keys from an HF ALBERT config dict; refuses what we cannot represent."""
    model_type = hf.get("model_type", "albert")
    if model_type != "albert":
        raise HFConfigError(f"{source}: field 'model_type' is {model_type!r}, expected 'albert'")
    epsilon = hf.get("layer_norm_eps", LAYER_NORM_EPSILON)
    if not isinstance(epsilon, (int, float)) or abs(epsilon - LAYER_NORM_EPSILON) > 1e-18:
        raise HFConfigError(f"{source}: field 'layer_norm_eps' is {epsilon!r}; ALBERT's LayerNorm "
                            f"uses {LAYER_NORM_EPSILON} and albert-tf implements only that")
    position = hf.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise HFConfigError(f"{source}: field 'position_embedding_type' is {position!r}; "
                            "albert-tf implements only 'absolute' position embeddings")
    if hf.get("tie_word_embeddings", True) is not True:
        raise HFConfigError(f"{source}: field 'tie_word_embeddings' is false; ALBERT's masked-LM "
                            "decoder is the word-embedding table and albert-tf always ties them")
    activation = hf.get("hidden_act", HF_DEFAULT_ACTIVATION)
    if not isinstance(activation, str) or activation.lower() not in ACTIVATIONS_FROM_HF:
        raise HFConfigError(f"{source}: field 'hidden_act' is {activation!r}; albert-tf implements "
                            f"{', '.join(sorted(ACTIVATIONS_FROM_HF))}")
    values = {key: hf.get(key, default) for key, default in SHARED_KEYS.items()}
    values["hidden_act"] = ACTIVATIONS_FROM_HF[activation.lower()]
    if values["embedding_size"] == values["hidden_size"]:
        values[EMBEDDING_PROJECTION_KEY] = True
    return values


def values_to_hf(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """An HF ALBERT config dict from our config keys; refuses what HF cannot represent."""
    sharing = values.get("cross_layer_sharing", "all")
    if sharing != "all":
        raise HFConfigError(
            f"{source}: field 'cross_layer_sharing' is {sharing!r}; Hugging Face ALBERT shares "
            "attention and feed-forward weights within each group, i.e. only 'all'")
    activation = str(values.get("hidden_act", "gelu")).lower()
    if activation not in ACTIVATIONS_TO_HF:
        raise HFConfigError(f"{source}: field 'hidden_act' {activation!r} has no Hugging Face name")
    hf = {key: values[key] for key in SHARED_KEYS}
    hf["hidden_act"] = ACTIVATIONS_TO_HF[activation]
    hf.update(WRITTEN_CONSTANTS)
    return hf


def differing_keys(ours: Mapping[str, Any], theirs: Mapping[str, Any],
                   keys: tuple[str, ...] = ARCHITECTURE_KEYS) -> list[str]:
    """"key: a vs b" for each of `keys` whose values differ (activation names compared
    case-insensitively), e.g. to say why a config file and an HF directory disagree."""
    out = []
    for key in keys:
        a, b = ours.get(key), theirs.get(key)
        if isinstance(a, str) and isinstance(b, str):
            a, b = a.lower(), b.lower()
        if a != b:
            out.append(f"{key}: {ours.get(key)!r} vs {theirs.get(key)!r}")
    return out


def config_from_hf(hf_config: Mapping[str, Any] | str | os.PathLike) -> AlbertConfig:
    """AlbertConfig from a Hugging Face ALBERT `config.json` (dict, file or model directory).

    HF's "gelu_new" becomes our (tanh) "gelu" and HF's exact "gelu" our "gelu_exact";
    E = H keeps HF's E→H projection (extra key `embedding_projection`). A field we cannot
    represent (e.g. `position_embedding_type` "relative_key", `hidden_act` "silu") is a
    ConfigError naming it. Head metadata (`num_labels`, `architectures`, …) is not kept.
    """
    try:
        if isinstance(hf_config, Mapping):
            values, source = hf_config, "<hf config>"
        else:
            source = os.fspath(hf_config)
            if paths.isdir(source):
                source = os.path.join(source, "config.json")
            values = read_hf_config(source)
        return AlbertConfig.from_dict(values_from_hf(values, source), source=source)
    except HFConfigError as e:
        raise ConfigError(str(e)) from None


def config_to_hf(config: AlbertConfig) -> dict[str, Any]:
    """`config` as a Hugging Face ALBERT `config.json` dict (HF AlbertConfig keys).

    Our "gelu" (tanh) is written as HF's "gelu_new". Raises ConfigError when HF cannot
    represent the model (`cross_layer_sharing` other than "all").
    """
    try:
        return values_to_hf(config.to_dict(), config.source)
    except HFConfigError as e:
        raise ConfigError(str(e)) from None


def config_disagreement(given: AlbertConfig, hf: AlbertConfig) -> list[str]:
    """"key: a vs b" for each model key (`COMPARED_KEYS`) on which a config file and an HF
    directory's config.json differ: the one check for "--albert_config_file and the HF
    directory must describe the same model"."""
    return differing_keys(given.to_dict(), hf.to_dict(), COMPARED_KEYS)
