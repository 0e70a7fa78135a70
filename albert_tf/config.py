"""AlbertConfig: the original `albert_config.json` keys, presets and validation.

The field names, types and constructor defaults are those of the original release
(faithfulness §1.1), so released config files load unchanged and files we write load in the
original. One field is new: `cross_layer_sharing`, the paper's Table 4 ablation.
This module knows nothing of layers or Hugging Face: `hidden_act` is checked against
`ACTIVATION_NAMES` (which `albert_tf.layers.activations` implements), and
`albert_tf.checkpoints.hf_config` translates Hugging Face `config.json` files.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Mapping

from albert_tf.runtime.atomic_files import atomic_file

SHARING_MODES = ("all", "attention", "ffn", "none")
# `hidden_act` values (case-insensitive; "" is the identity too): the original's names
# (faithfulness §2.8) plus "gelu_exact", HF's erf GELU. `layers.activations` maps each one.
ACTIVATION_NAMES = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# (name, accepted Python types, constructor default). Defaults are the original's
# xxlarge-like constructor values (faithfulness §1.1); vocab_size has no default.
_FIELDS: tuple[tuple[str, tuple[type, ...], Any], ...] = (
    ("vocab_size", (int,), None),
    ("embedding_size", (int,), 128),
    ("hidden_size", (int,), 4096),
    ("num_hidden_layers", (int,), 12),
    ("num_hidden_groups", (int,), 1),
    ("num_attention_heads", (int,), 64),
    ("intermediate_size", (int,), 16384),
    ("inner_group_num", (int,), 1),
    ("down_scale_factor", (int, float), 1),
    ("hidden_act", (str,), "gelu"),
    ("hidden_dropout_prob", (int, float), 0.0),
    ("attention_probs_dropout_prob", (int, float), 0.0),
    ("max_position_embeddings", (int,), 512),
    ("type_vocab_size", (int,), 2),
    ("initializer_range", (int, float), 0.02),
    ("cross_layer_sharing", (str,), "all"),
)
FIELD_NAMES = tuple(name for name, _, _ in _FIELDS)
# Extra key that keeps the E→H projection when E = H (HF models always have it).
EMBEDDING_PROJECTION_KEY = "embedding_projection"

# Released English sizes (faithfulness §1.2): (L, H, N, I, v1 dropout).
_SIZES = {
    "base": (12, 768, 12, 3072, 0.1),
    "large": (24, 1024, 16, 4096, 0.1),
    "xlarge": (24, 2048, 16, 8192, 0.1),
    "xxlarge": (12, 4096, 64, 16384, 0.0),
}
PRESET_NAMES = tuple(
    f"albert_{size}_{version}" for size in _SIZES for version in ("v1", "v2")
)
# The demo's model (`make demo`, the README's pip section; H=32, 2 layers, 1000-piece
# vocabulary: minutes on a 2-core CPU), installed with the package as a plain JSON file.
DEMO_CONFIG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs",
                                "demo_albert_config.json")


def layer_group(layer_index: int, num_hidden_layers: int, num_hidden_groups: int) -> int:
    """Parameter group of layer i: int(i / L * G) in floating point, as the original.

    The float form differs from (i * G) // L in rare cases (faithfulness §2.3: L = G = 22
    maps layer 15 to group 14, and group 15 never exists); the original's variable sets
    depend on it. The model's layer schedule and `AlbertConfig.group_of_layer` both use it.
    """
    return int(layer_index / num_hidden_layers * num_hidden_groups)


class ConfigError(ValueError):
    """A config value is missing, of the wrong type or inconsistent."""


def read_json_file(path: str) -> Any:
    """The JSON content of a config file; ConfigError naming the file (and line) otherwise."""
    from albert_tf.runtime import paths

    if not paths.isfile(path):
        raise ConfigError(f"{path}: config file not found")
    try:
        return json.loads(paths.read_text(path))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None


class AlbertConfig:
    """Hyperparameters of an ALBERT model, keyed exactly as `albert_config.json`.

    Unknown keys (e.g. `net_structure_type`, `gap_size` in released files) are kept as
    attributes and written back, as the original's attribute-bag config does.

    Example:
        >>> config = AlbertConfig.from_preset("albert_base_v2")
        >>> config.hidden_size, config.num_hidden_layers
        (768, 12)
    """

    def __init__(self, vocab_size: int | None = None, **kwargs: Any):
        self.vocab_size = vocab_size
        for name, _, default in _FIELDS[1:]:
            setattr(self, name, kwargs.pop(name, default))
        # Keys the model does not use are carried along, as in the original.
        self.extra: dict[str, Any] = dict(kwargs)
        self._source = "<AlbertConfig>"
        self.validate()

    # ----- construction -----
    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "<dict>") -> "AlbertConfig":
        """Builds a config from a JSON-like dict; `source` names it in error messages."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"{source}: expected a JSON object, got {type(values).__name__}")
        config = cls.__new__(cls)
        config._source = source
        config.vocab_size = values.get("vocab_size")
        for name, _, default in _FIELDS[1:]:
            setattr(config, name, values.get(name, default))
        config.extra = {k: v for k, v in values.items() if k not in FIELD_NAMES}
        config.validate()
        return config

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "AlbertConfig":
        """Reads an `albert_config.json` (original or ours)."""
        path = os.fspath(path)
        return cls.from_dict(read_json_file(path), source=path)

    @classmethod
    def from_preset(cls, name: str) -> "AlbertConfig":
        """The config of a released model, named as its tarball (e.g. "albert_large_v1")."""
        if name not in PRESET_NAMES:
            raise ConfigError(f"unknown preset {name!r}; expected one of {', '.join(PRESET_NAMES)}")
        _, size, version = name.split("_")
        layers, hidden, heads, inner, v1_dropout = _SIZES[size]
        dropout = v1_dropout if version == "v1" else 0.0
        return cls(
            vocab_size=30000,
            embedding_size=128,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_hidden_groups=1,
            num_attention_heads=heads,
            intermediate_size=inner,
            inner_group_num=1,
            down_scale_factor=1,
            hidden_act="gelu",
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            max_position_embeddings=512,
            type_vocab_size=2,
            initializer_range=0.02,
            net_structure_type=0,
            gap_size=0,
            num_memory_blocks=0,
        )

    # ----- serialisation -----
    def to_dict(self) -> dict[str, Any]:
        """All fields, the extra keys included."""
        values = {name: getattr(self, name) for name in FIELD_NAMES}
        values.update(copy.deepcopy(self.extra))
        return values

    def to_json_string(self) -> str:
        """JSON with 2-space indent and sorted keys, the original's layout."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes the JSON atomically (temporary file, then rename)."""
        with atomic_file(path) as f:
            f.write(self.to_json_string())

    def copy(self, **overrides: Any) -> "AlbertConfig":
        """A validated copy with some fields replaced."""
        values = self.to_dict()
        values.update(overrides)
        return AlbertConfig.from_dict(values, source=self._source)

    @property
    def source(self) -> str:
        """Where this config was read from (error messages name it)."""
        return self._source

    # ----- derived values -----
    @property
    def has_embedding_projection(self) -> bool:
        """The E→H projection exists when E ≠ H (the original) or when asked for (HF's E = H)."""
        return (self.embedding_size != self.hidden_size
                or bool(self.extra.get(EMBEDDING_PROJECTION_KEY, False)))

    @property
    def head_size(self) -> int:
        """D = H / N, the per-head width."""
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer_index: int) -> int:
        """Parameter group of layer i (`layer_group` with this config's L and G)."""
        return layer_group(layer_index, self.num_hidden_layers, self.num_hidden_groups)

    # ----- validation -----
    def validate(self) -> None:
        """Raises ConfigError naming the field and the source file on a bad value."""
        where = self._source
        if self.vocab_size is None:
            raise ConfigError(f"{where}: field 'vocab_size' is required")
        for name, types, _ in _FIELDS:
            value = getattr(self, name)
            # bool is an int subclass in Python; a JSON true is never a valid size.
            if isinstance(value, bool) or not isinstance(value, types):
                expected = " or ".join(t.__name__ for t in types)
                raise ConfigError(
                    f"{where}: field '{name}' must be {expected}, got {value!r} "
                    f"({type(value).__name__})"
                )
        for name in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                     "num_hidden_groups", "num_attention_heads", "intermediate_size",
                     "inner_group_num", "max_position_embeddings", "type_vocab_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}: field '{name}' must be >= 1, got {getattr(self, name)}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{where}: field '{name}' must be in [0, 1), got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"{where}: field 'hidden_size' ({self.hidden_size}) must be divisible by "
                f"'num_attention_heads' ({self.num_attention_heads})"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"{where}: field 'num_hidden_groups' ({self.num_hidden_groups}) must not exceed "
                f"'num_hidden_layers' ({self.num_hidden_layers})"
            )
        if self.cross_layer_sharing not in SHARING_MODES:
            raise ConfigError(
                f"{where}: field 'cross_layer_sharing' must be one of {', '.join(SHARING_MODES)}, "
                f"got {self.cross_layer_sharing!r}"
            )
        projection = self.extra.get(EMBEDDING_PROJECTION_KEY, False)
        if not isinstance(projection, bool):
            raise ConfigError(f"{where}: field '{EMBEDDING_PROJECTION_KEY}' must be true or false, "
                              f"got {projection!r}")
        if self.hidden_act.lower() not in ACTIVATION_NAMES + ("",):
            raise ConfigError(f"{where}: field 'hidden_act': unknown activation "
                              f"{self.hidden_act!r}; expected one of {', '.join(ACTIVATION_NAMES)}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AlbertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"AlbertConfig({self.to_dict()})"
