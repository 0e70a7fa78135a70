"""Hugging Face config.json ↔ AlbertConfig: names, activations, refusals naming the field."""

import json

import pytest

from albert_tf import AlbertConfig, ConfigError
from albert_tf.checkpoints.hf_config import config_from_hf, config_to_hf
from albert_tf.config import FIELD_NAMES
from tests.conftest import tiny_config

transformers = pytest.importorskip("transformers",
                                   reason="transformers (requirements-dev.txt) is not installed")

# albert-base-v2's published config.json (HF hub), abridged to its model keys.
HF_BASE_V2 = {
    "architectures": ["AlbertForMaskedLM"], "attention_probs_dropout_prob": 0, "bos_token_id": 2,
    "classifier_dropout_prob": 0.1, "down_scale_factor": 1, "embedding_size": 128,
    "eos_token_id": 3, "gap_size": 0, "hidden_act": "gelu_new", "hidden_dropout_prob": 0,
    "hidden_size": 768, "initializer_range": 0.02, "inner_group_num": 1,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
    "model_type": "albert", "net_structure_type": 0, "num_attention_heads": 12,
    "num_hidden_groups": 1, "num_hidden_layers": 12, "num_memory_blocks": 0, "pad_token_id": 0,
    "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": 30000,
}


def test_released_hf_config_is_the_original_preset(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(HF_BASE_V2))
    config = config_from_hf(tmp_path)  # a directory or its config.json
    preset = AlbertConfig.from_preset("albert_base_v2")
    assert {k: getattr(config, k) for k in FIELD_NAMES} == {k: getattr(preset, k) for k in FIELD_NAMES}
    assert config.extra == {}  # head metadata and HF-only keys are not kept


@pytest.mark.parametrize("hf_act,ours", [("gelu_new", "gelu"), ("gelu", "gelu_exact"),
                                         ("gelu_pytorch_tanh", "gelu"), ("relu", "relu")])
def test_activation_names_map_both_ways(hf_act, ours):
    config = config_from_hf({**HF_BASE_V2, "hidden_act": hf_act})
    assert config.hidden_act == ours
    back = config_to_hf(config)["hidden_act"]
    assert back == {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}[ours]


def test_written_config_is_read_by_transformers_with_the_same_shape(tmp_path):
    config = tiny_config(num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2)
    (tmp_path / "config.json").write_text(json.dumps(config_to_hf(config)))
    hf = transformers.AlbertConfig.from_pretrained(str(tmp_path))
    for key in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                "num_hidden_groups", "inner_group_num", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size"):
        assert getattr(hf, key) == getattr(config, key), key
    assert hf.hidden_act == "gelu_new" and hf.layer_norm_eps == 1e-12
    assert config_from_hf(tmp_path) == config


def test_e_equal_h_keeps_the_hf_projection():
    config = config_from_hf({**HF_BASE_V2, "embedding_size": 768})
    assert config.has_embedding_projection and config.extra == {"embedding_projection": True}
    assert not tiny_config(embedding_size=32).has_embedding_projection  # the original at E = H


@pytest.mark.parametrize("field,value,message", [
    ("position_embedding_type", "relative_key", "only 'absolute' position embeddings"),
    ("hidden_act", "silu", "field 'hidden_act' is 'silu'"),
    ("layer_norm_eps", 1e-5, "field 'layer_norm_eps' is 1e-05"),
    ("model_type", "bert", "field 'model_type' is 'bert', expected 'albert'"),
    ("tie_word_embeddings", False, "field 'tie_word_embeddings' is false"),
])
def test_fields_we_cannot_represent_are_named(tmp_path, field, value, message):
    (tmp_path / "config.json").write_text(json.dumps({**HF_BASE_V2, field: value}))
    with pytest.raises(ConfigError, match=message) as error:
        config_from_hf(tmp_path)
    assert str(error.value).startswith(f"{tmp_path}/config.json: field '{field}'")


def test_models_hf_cannot_hold_are_refused_naming_the_field():
    with pytest.raises(ConfigError, match="field 'cross_layer_sharing' is 'ffn'"):
        config_to_hf(tiny_config(cross_layer_sharing="ffn"))
    with pytest.raises(ConfigError, match="config.json: not found"):
        config_from_hf("/nonexistent/dir/config.json")
