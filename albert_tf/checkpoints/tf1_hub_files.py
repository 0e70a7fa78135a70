"""A TF1 Hub module directory (the original's export_to_tfhub.py output), without TensorFlow.

What marks one on disk (faithfulness §11.1): `tfhub_module.pb`, tensorflow_hub's `ModuleDef`
(field 1 `format`, 3 = "Hub SavedModel format v3"), beside a TF1 SavedModel: `saved_model.pb`,
`variables/variables.*` (a name-based checkpoint under the original's names) and `assets/`
(`albert_config.json`, `30k-clean.model`, `30k-clean.vocab`). Paths only, so the kind rule
(`kinds.checkpoint_kind`) and option checks can ask before TensorFlow is imported; reading the
module is `checkpoints.tf1_hub`. Nothing downloads at run time: a hub URL is refused with the
way to pass the unpacked directory instead.
"""

from __future__ import annotations

import os

from albert_tf.runtime import paths

MODULE_MARKER = "tfhub_module.pb"
SAVED_MODEL_FILE = "saved_model.pb"  # what makes a directory a SavedModel (export/layout.py)
VARIABLES_PREFIX = os.path.join("variables", "variables")
ASSETS_DIR = "assets"
CONFIG_ASSET = "albert_config.json"
MODULE_FORMAT = 3  # tensorflow_hub ModuleDef.FORMAT_V3, the only format hub.Module wrote
# Hosts of published modules (tfhub.dev redirects to Kaggle Models).
HUB_HOSTS = ("tfhub.dev", "www.kaggle.com", "kaggle.com")


def is_hub_url(handle: str | os.PathLike | None) -> bool:
    """True for a hub handle that names a download (`https://tfhub.dev/google/albert_base/3`,
    a Kaggle Models URL, or such a handle without its scheme), not a local path."""
    if not handle:
        return False
    text = os.fspath(handle)
    if text.startswith(("http://", "https://")):
        return True
    return text.split("/")[0] in HUB_HOSTS and not paths.exists(text)


def url_refusal(handle: str) -> str:
    """The one line a hub URL gets: nothing downloads at run time, and what to pass instead."""
    return (f"{handle}: a hub URL; albert-tf downloads nothing at run time: fetch the module "
            f"once (for tfhub.dev: curl -L '{handle}?tf-hub-format=compressed' | tar -xz -C DIR) "
            "and pass the unpacked directory DIR")


def is_tf1_hub_module(path: str | os.PathLike | None) -> bool:
    """True when `path` is a TF1 Hub module directory (it holds `tfhub_module.pb`)."""
    return bool(path) and paths.isfile(os.path.join(os.fspath(path), MODULE_MARKER))


def is_saved_model(path: str | os.PathLike | None) -> bool:
    """True when `path` is a SavedModel directory (TF1 or TF2: it holds `saved_model.pb`)."""
    return bool(path) and paths.isfile(os.path.join(os.fspath(path), SAVED_MODEL_FILE))


def module_format(path: str) -> int:
    """The `format` field of the module's `tfhub_module.pb` (0 when unset).

    A ModuleDef has two fields, `format` (1, varint) and `required_features` (2, strings), so
    the protobuf wire format is read by hand instead of shipping tensorflow_hub's proto.
    Raises ValueError for bytes that are not a ModuleDef."""
    marker = os.path.join(os.fspath(path), MODULE_MARKER)
    data = paths.read_bytes(marker)
    position, value_of = 0, {}

    def varint() -> int:
        nonlocal position
        result = shift = 0
        while True:
            if position >= len(data) or shift > 63:
                raise ValueError(f"{marker}: not a tensorflow_hub ModuleDef")
            byte = data[position]
            position += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    while position < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            value_of[field] = varint()
        elif wire == 2:
            position += varint()
        else:
            raise ValueError(f"{marker}: not a tensorflow_hub ModuleDef")
    if position != len(data):
        raise ValueError(f"{marker}: not a tensorflow_hub ModuleDef (truncated)")
    return value_of.get(1, 0)


def asset_path(path: str, name: str) -> str:
    """`assets/<name>` of the module."""
    return os.path.join(os.fspath(path), ASSETS_DIR, name)


def variables_prefix(path: str) -> str:
    """The prefix of the module's variables checkpoint (`variables/variables`)."""
    return os.path.join(os.fspath(path), VARIABLES_PREFIX)
