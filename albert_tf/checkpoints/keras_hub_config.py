"""keras-hub `AlbertBackbone` config (its `config.json` "config") ↔ the original's config keys.

The differences, stated once: keras-hub's names (`vocabulary_size`, `num_layers`,
`num_groups` = the original's `num_hidden_groups`, `num_inner_repetitions` =
`inner_group_num`, …); one `dropout` for the original's hidden and attention dropout; the
activation is always the tanh GELU (our "gelu", keras-hub's `gelu_approximate`); the E→H
projection is always there (E = H keeps it: key `embedding_projection`, as for HF);
`num_layers` must be a multiple of `num_groups`, and only cross_layer_sharing "all" exists.
`config_disagreement` (hf_config's) is the one check that a config file and a preset agree.
"""

from __future__ import annotations

from typing import Any, Mapping

from albert_tf.checkpoints.report import CheckpointFileError
from albert_tf.config import EMBEDDING_PROJECTION_KEY, AlbertConfig

# keras-hub key → ours.
KEYS_FROM_KERAS_HUB = {
    "vocabulary_size": "vocab_size", "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads", "embedding_dim": "embedding_size",
    "hidden_dim": "hidden_size", "intermediate_dim": "intermediate_size",
    "num_groups": "num_hidden_groups", "num_inner_repetitions": "inner_group_num",
    "max_sequence_length": "max_position_embeddings", "num_segments": "type_vocab_size",
}
# AlbertBackbone's constructor defaults for the keys that have one.
DEFAULTS = {"num_groups": 1, "num_inner_repetitions": 1, "dropout": 0.0,
            "max_sequence_length": 512, "num_segments": 2}
BACKBONE_MODULE = "keras_hub.src.models.albert.albert_backbone"


def values_from_keras_hub(backbone: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Our config keys from an AlbertBackbone config; CheckpointFileError naming a field."""
    values: dict[str, Any] = {}
    for theirs, ours in KEYS_FROM_KERAS_HUB.items():
        value = backbone.get(theirs, DEFAULTS.get(theirs))
        if not isinstance(value, int) or isinstance(value, bool):
            raise CheckpointFileError(f"{source}: field 'config.{theirs}' is {value!r}; expected "
                                      "an integer")
        values[ours] = value
    dropout = backbone.get("dropout", DEFAULTS["dropout"])
    values.update(hidden_act="gelu", hidden_dropout_prob=dropout,
                  attention_probs_dropout_prob=dropout, initializer_range=0.02)
    if values["embedding_size"] == values["hidden_size"]:
        values[EMBEDDING_PROJECTION_KEY] = True
    return values


def config_from_keras_hub(backbone: Mapping[str, Any], source: str) -> AlbertConfig:
    """AlbertConfig of an AlbertBackbone config (E = H keeps keras-hub's projection)."""
    return AlbertConfig.from_dict(values_from_keras_hub(backbone, source), source=source)


def config_to_keras_hub(config: AlbertConfig) -> dict[str, Any]:
    """The serialized AlbertBackbone (config.json) of `config`; ValueError naming a field
    keras-hub cannot hold."""
    if config.cross_layer_sharing != "all":
        raise ValueError(f"{config.source}: field 'cross_layer_sharing' is "
                         f"{config.cross_layer_sharing!r}; keras-hub's AlbertBackbone shares "
                         "attention and feed-forward weights within each group, i.e. only 'all'")
    if config.hidden_act.lower() != "gelu":
        raise ValueError(f"{config.source}: field 'hidden_act' is {config.hidden_act!r}; "
                         "keras-hub's AlbertBackbone has only the tanh GELU ('gelu')")
    if config.num_hidden_layers % config.num_hidden_groups:
        raise ValueError(f"{config.source}: num_hidden_layers {config.num_hidden_layers} is no "
                         f"multiple of num_hidden_groups {config.num_hidden_groups}, which "
                         "keras-hub's AlbertBackbone requires")
    inner = {ours: theirs for theirs, ours in KEYS_FROM_KERAS_HUB.items()}
    values = config.to_dict()
    body: dict[str, Any] = {
        "name": "albert_backbone", "trainable": True,
        "dtype": {"module": "keras", "class_name": "DTypePolicy",
                  "config": {"name": "float32"}, "registered_name": None},
    }
    for key in ("vocab_size", "num_hidden_layers", "num_attention_heads", "num_hidden_groups",
                "inner_group_num", "embedding_size", "hidden_size", "intermediate_size"):
        body[inner[key]] = values[key]
    body.update(dropout=values["hidden_dropout_prob"],
                max_sequence_length=values["max_position_embeddings"],
                num_segments=values["type_vocab_size"])
    return {"module": BACKBONE_MODULE, "class_name": "AlbertBackbone", "config": body,
            "registered_name": "keras_hub>AlbertBackbone"}
