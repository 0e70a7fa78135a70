"""AlbertConfig: original JSON keys and defaults, presets, validation messages."""

import json
import os

import pytest

from albert_tf import PRESET_NAMES, AlbertConfig, ConfigError
from albert_tf.config import DEMO_CONFIG_FILE

# A released file's content (albert_base_v2 as in the tarball), extra keys included.
RELEASED_BASE_V2 = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0,
    "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_constructor_defaults_are_the_originals():
    config = AlbertConfig(vocab_size=10)
    assert (config.embedding_size, config.hidden_size, config.num_hidden_layers,
            config.num_hidden_groups, config.num_attention_heads, config.intermediate_size,
            config.inner_group_num, config.hidden_act, config.hidden_dropout_prob,
            config.attention_probs_dropout_prob, config.max_position_embeddings,
            config.type_vocab_size, config.initializer_range, config.down_scale_factor) == (
        128, 4096, 12, 1, 64, 16384, 1, "gelu", 0, 0, 512, 2, 0.02, 1)
    assert config.cross_layer_sharing == "all"


def test_released_file_round_trips_with_extra_keys(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(RELEASED_BASE_V2))
    config = AlbertConfig.from_json_file(path)
    assert config == AlbertConfig.from_preset("albert_base_v2")
    assert config.extra == {"net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0}
    out = tmp_path / "out.json"
    config.to_json_file(out)
    written = json.loads(out.read_text())
    assert {k: written[k] for k in RELEASED_BASE_V2} == RELEASED_BASE_V2
    assert written["cross_layer_sharing"] == "all"
    assert list(written) == sorted(written)  # sorted keys, as the original writes
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_presets_match_the_released_sizes(name):
    sizes = {"base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096),
             "xlarge": (24, 2048, 16, 8192), "xxlarge": (12, 4096, 64, 16384)}
    _, size, version = name.split("_")
    config = AlbertConfig.from_preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
            config.intermediate_size) == sizes[size]
    expected_dropout = 0.1 if version == "v1" and size != "xxlarge" else 0.0
    assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == expected_dropout
    assert (config.vocab_size, config.embedding_size) == (30000, 128)


def test_layer_to_group_uses_the_float_expression():
    # faithfulness §2.3: L = G = 22 maps layer 15 to group 14 (15/22*22 = 14.999...).
    config = AlbertConfig(vocab_size=10, hidden_size=64, num_attention_heads=4,
                          num_hidden_layers=22, num_hidden_groups=22)
    assert config.group_of_layer(15) == 14
    five_two = AlbertConfig(vocab_size=10, hidden_size=64, num_attention_heads=4,
                            num_hidden_layers=5, num_hidden_groups=2)
    assert [five_two.group_of_layer(i) for i in range(5)] == [0, 0, 0, 1, 1]


@pytest.mark.parametrize("values, message", [
    (dict(hidden_size=30, num_attention_heads=4), "'hidden_size' (30) must be divisible"),
    (dict(num_hidden_layers=2, num_hidden_groups=3), "'num_hidden_groups' (3) must not exceed"),
    (dict(cross_layer_sharing="some"), "'cross_layer_sharing' must be one of"),
    (dict(hidden_size="768"), "'hidden_size' must be int"),
    (dict(num_hidden_layers=True), "'num_hidden_layers' must be int"),
    (dict(hidden_act="swishy"), "'hidden_act'"),
    (dict(hidden_dropout_prob=1.5), "'hidden_dropout_prob' must be in"),
])
def test_bad_values_name_the_field_and_file(tmp_path, values, message):
    path = tmp_path / "bad_config.json"
    path.write_text(json.dumps({**RELEASED_BASE_V2, **values}))
    with pytest.raises(ConfigError) as error:
        AlbertConfig.from_json_file(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_missing_vocab_and_broken_json(tmp_path):
    with pytest.raises(ConfigError, match="'vocab_size' is required"):
        AlbertConfig.from_dict({"hidden_size": 768, "num_attention_heads": 12})
    path = tmp_path / "broken.json"
    path.write_text('{"vocab_size": 3,\n "hidden_size": }')
    with pytest.raises(ConfigError, match=r"broken.json: line 2"):
        AlbertConfig.from_json_file(path)
    with pytest.raises(ConfigError, match="unknown preset"):
        AlbertConfig.from_preset("albert_huge_v3")


def test_the_demo_config_is_package_data_at_the_makefiles_path_too():
    """The demo's model (README: H=32, 2 layers) ships inside the package (pyproject's
    package-data; albert-write-config --preset=demo) and is the file `make demo` reads."""
    config = AlbertConfig.from_json_file(DEMO_CONFIG_FILE)
    assert (config.hidden_size, config.num_hidden_layers) == (32, 2)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert os.path.samefile(DEMO_CONFIG_FILE, os.path.join(repo, "configs", "demo_albert_config.json"))
