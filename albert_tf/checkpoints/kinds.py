"""Which format a checkpoint path holds — the one rule every caller asks.

Four kinds, one name each: "original" (the original release's TF1 names), "ours" (our
object-based checkpoints, `checkpoints.ours`), "hf" (a Hugging Face model directory) and
"tf1_hub" (the original's TF1 Hub module directory, `checkpoints.tf1_hub`: its variables are an
original checkpoint). `is_hf_checkpoint` is the one "is this an HF directory" test
(`hf_files.hf_directory`) and `is_tf1_hub_module` the one for modules; neither needs
TensorFlow, so option checks can ask them before TensorFlow is imported. A hub URL and a
SavedModel that is not a TF1 Hub module are refused here, each with one line.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.hf_files import hf_directory
from albert_tf.checkpoints.report import CheckpointFileError
from albert_tf.checkpoints.tf1_hub_files import (MODULE_MARKER, is_hub_url, is_saved_model,
                                                 is_tf1_hub_module, url_refusal)

KINDS = ("original", "ours", "hf", "tf1_hub")
# How logs and reports name each kind.
KIND_NAMES = {"original": "original TF1", "ours": "albert-tf", "hf": "Hugging Face",
              "tf1_hub": "TF1 Hub module"}


def is_hf_checkpoint(path: str | os.PathLike | None) -> bool:
    """True when `path` is a Hugging Face model directory (or a file inside one)."""
    return bool(path) and hf_directory(os.fspath(path)) is not None


def checkpoint_kind(path: str) -> str:
    """"original" for a TF1 name-based ALBERT checkpoint, "ours" for one of ours (object-based),
    "hf" for a Hugging Face model directory (config.json + model.safetensors), "tf1_hub" for a
    TF1 Hub module directory (tfhub_module.pb + SavedModel)."""
    if is_hub_url(path):
        raise CheckpointFileError(url_refusal(os.fspath(path)))
    if is_hf_checkpoint(path):
        return "hf"
    if is_tf1_hub_module(path):
        return "tf1_hub"
    if is_saved_model(path):
        raise CheckpointFileError(
            f"{path}: a SavedModel without {MODULE_MARKER}: neither a checkpoint nor a TF1 Hub "
            "module (an albert-tf encoder export goes to --albert_hub_module_handle)")
    import tensorflow as tf

    from albert_tf.checkpoints.original import TF2_MARKER, resolve_checkpoint_path

    reader = tf.train.load_checkpoint(resolve_checkpoint_path(path))
    names = reader.get_variable_to_shape_map()
    if TF2_MARKER in names:
        return "ours"
    if "bert/embeddings/word_embeddings" in names:
        return "original"
    raise ValueError(f"{path}: neither an original ALBERT checkpoint, a TF2 object checkpoint, "
                     "a Hugging Face directory nor a TF1 Hub module")


def is_original_checkpoint(path: str) -> bool:
    """True when `path` (prefix or directory) holds an original-release TF1 checkpoint."""
    return checkpoint_kind(path) == "original"
