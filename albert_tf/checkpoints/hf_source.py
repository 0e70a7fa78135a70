"""A Hugging Face model directory read once: its config.json parsed and its weights' header
read at most once per run, however many steps (config, pre-flight check, warm start) ask.

`open_hf_directory(path)` keeps the last few directories it opened, keyed by the files'
identity (inode, size, modification time): a directory rewritten between two calls is read
again, an unchanged one is not. The config values are handed out as copies, so a caller
may edit its own.

Example:
    >>> source = open_hf_directory("albert-base-v2")
    >>> source.values["hidden_size"], source.weights.shapes["albert.pooler.bias"]
    (768, [768])
"""

from __future__ import annotations

import collections
import copy
import functools
import os
from typing import Any

from albert_tf.checkpoints import hf_config
from albert_tf.checkpoints.hf_files import CONFIG_FILE, WEIGHT_FILES, HFWeights, hf_directory
from albert_tf.checkpoints.report import CheckpointFileError

_CACHE_SIZE = 4  # directories kept (a PyTorch file's tensors live in its HFWeights)
_cache: collections.OrderedDict[tuple, "HFDirectory"] = collections.OrderedDict()


class HFDirectory:
    """config.json (raw and as our keys) and the weights of one HF model directory."""

    def __init__(self, directory: str):
        self.directory = directory
        self.config_file = os.path.join(directory, CONFIG_FILE)
        try:
            raw = hf_config.read_hf_config(directory)
            values = hf_config.values_from_hf(raw, self.config_file)
        except hf_config.HFConfigError as e:
            raise CheckpointFileError(str(e)) from None
        self._raw, self._values = raw, values

    @property
    def raw(self) -> dict[str, Any]:
        """The config.json object (a copy)."""
        return copy.deepcopy(self._raw)

    @property
    def values(self) -> dict[str, Any]:
        """Our config keys from config.json (a copy)."""
        return copy.deepcopy(self._values)

    @functools.cached_property
    def weights(self) -> HFWeights:
        """The tensors' names and shapes (the safetensors header, read on first use)."""
        return HFWeights(self.directory)


def _signature(directory: str) -> tuple:
    """The identity of the files a read depends on (absent files included, as None)."""
    out = []
    for name in (CONFIG_FILE,) + WEIGHT_FILES:
        try:
            stat = os.stat(os.path.join(directory, name))
            out.append((name, stat.st_ino, stat.st_size, stat.st_mtime_ns))
        except FileNotFoundError:
            out.append((name, None))
    return tuple(out)


def open_hf_directory(path: str) -> HFDirectory:
    """The HF directory `path` is (or a file of), read once while its files are unchanged.

    Raises FileNotFoundError when `path` is no HF directory and CheckpointFileError (one
    line naming the file) for a config.json that is missing, not JSON or not representable.
    """
    directory = hf_directory(path)
    if directory is None:
        raise FileNotFoundError(f"{path}: not a Hugging Face model directory (expected "
                                "config.json and model.safetensors)")
    key = (directory, _signature(directory))
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    source = HFDirectory(directory)
    _cache[key] = source
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return source
