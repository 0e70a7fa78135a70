"""Which format a checkpoint path holds — the one rule every caller asks.

Three kinds, one name each: "original" (the original release's TF1 names), "ours" (our
object-based checkpoints, `checkpoints.ours`) and "hf" (a Hugging Face model directory).
`is_hf_checkpoint` is the one "is this an HF directory" test (`hf_files.hf_directory`), and
needs no TensorFlow, so option checks can ask it before TensorFlow is imported.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.hf_files import hf_directory

KINDS = ("original", "ours", "hf")
# How logs and reports name each kind.
KIND_NAMES = {"original": "original TF1", "ours": "albert-tf", "hf": "Hugging Face"}


def is_hf_checkpoint(path: str | os.PathLike | None) -> bool:
    """True when `path` is a Hugging Face model directory (or a file inside one)."""
    return bool(path) and hf_directory(os.fspath(path)) is not None


def checkpoint_kind(path: str) -> str:
    """"original" for a TF1 name-based ALBERT checkpoint, "ours" for one of ours (object-based),
    "hf" for a Hugging Face model directory (config.json + model.safetensors)."""
    if is_hf_checkpoint(path):
        return "hf"
    import tensorflow as tf

    from albert_tf.checkpoints.original import TF2_MARKER, resolve_checkpoint_path

    reader = tf.train.load_checkpoint(resolve_checkpoint_path(path))
    names = reader.get_variable_to_shape_map()
    if TF2_MARKER in names:
        return "ours"
    if "bert/embeddings/word_embeddings" in names:
        return "original"
    raise ValueError(f"{path}: neither an original ALBERT checkpoint, a TF2 object checkpoint "
                     "nor a Hugging Face directory")


def is_original_checkpoint(path: str) -> bool:
    """True when `path` (prefix or directory) holds an original-release TF1 checkpoint."""
    return checkpoint_kind(path) == "original"
