"""Which format a checkpoint path holds: "original" (TF1 names), "tf2" (ours) or "hf"."""

from __future__ import annotations

import os

import tensorflow as tf

from albert_tf.checkpoints.hf_files import hf_directory
from albert_tf.checkpoints.original import TF2_MARKER, resolve_checkpoint_path

KINDS = ("original", "tf2", "hf")


def checkpoint_kind(path: str) -> str:
    """"original" for a TF1 name-based ALBERT checkpoint, "tf2" for one of ours (object-based),
    "hf" for a Hugging Face model directory (config.json + model.safetensors)."""
    if hf_directory(path) is not None:
        return "hf"
    reader = tf.train.load_checkpoint(resolve_checkpoint_path(path))
    names = reader.get_variable_to_shape_map()
    if TF2_MARKER in names:
        return "tf2"
    if "bert/embeddings/word_embeddings" in names:
        return "original"
    raise ValueError(f"{path}: neither an original ALBERT checkpoint, a TF2 object checkpoint "
                     "nor a Hugging Face directory")


def is_original_checkpoint(path: str) -> bool:
    """True when `path` (prefix or directory) holds an original-release TF1 checkpoint."""
    return checkpoint_kind(path) == "original"


def is_hf_checkpoint(path: str | None) -> bool:
    """True when `path` is a Hugging Face model directory (or a file inside one)."""
    return bool(path) and hf_directory(os.fspath(path)) is not None
