"""Which format a checkpoint path holds — the one rule every caller asks.

Four kinds, one name each: "original" (the original release's TF1 names), "ours" (our
object-based checkpoints, `checkpoints.ours`), "hf" (a Hugging Face model directory) and
"tf1_hub" (the original's TF1 Hub module directory, `checkpoints.tf1_hub`: its variables are an
original checkpoint). `is_hf_checkpoint` is the one "is this an HF directory" test
(`hf_files.hf_directory`) and `is_tf1_hub_module` the one for modules; neither needs
TensorFlow, so option checks can ask them before TensorFlow is imported. A hub URL and a
SavedModel that is not a TF1 Hub module are refused here, each with one line. A keras-hub
preset is "keras_hub" (`keras_hub_files.is_keras_hub_preset`, no TensorFlow either), asked
before the HF test: both directories hold a config.json.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.hf_files import hf_directory
from albert_tf.checkpoints.keras_hub_files import is_keras_hub_preset
from albert_tf.checkpoints.model_garden_files import (is_model_garden_checkpoint,
                                                      is_model_garden_export)
from albert_tf.checkpoints.report import CheckpointFileError
from albert_tf.checkpoints.tf1_hub_files import (MODULE_MARKER, is_hub_url, is_saved_model,
                                                 is_tf1_hub_module, url_refusal)

KINDS = ("original", "ours", "hf", "tf1_hub", "keras_hub", "model_garden",
         "model_garden_checkpoint")
# How logs and reports name each kind.
KIND_NAMES = {"original": "original TF1", "ours": "albert-tf", "hf": "Hugging Face",
              "tf1_hub": "TF1 Hub module", "keras_hub": "keras-hub preset",
              "model_garden": "Model Garden TF2 Hub encoder",
              "model_garden_checkpoint": "Model Garden checkpoint"}


def is_hf_checkpoint(path: str | os.PathLike | None) -> bool:
    """True when `path` is a Hugging Face model directory (or a file inside one); a keras-hub
    preset (its config.json a serialized Keras object, `keras_hub_files`) is none."""
    return (bool(path) and hf_directory(os.fspath(path)) is not None
            and not is_keras_hub_preset(path))


def checkpoint_kind(path: str) -> str:
    """"original" for a TF1 name-based ALBERT checkpoint, "ours" for one of ours (object-based),
    "hf" for a Hugging Face model directory (config.json + model.safetensors), "tf1_hub" for a
    TF1 Hub module directory (tfhub_module.pb + SavedModel), "keras_hub" for a keras-hub preset
    directory (config.json + model.weights.h5)."""
    if is_hub_url(path):
        raise CheckpointFileError(url_refusal(os.fspath(path)))
    if is_keras_hub_preset(path):  # "keras_hub": config.json + model.weights.h5 (keras_hub_files)
        return "keras_hub"
    if is_hf_checkpoint(path):
        return "hf"
    if is_tf1_hub_module(path):
        return "tf1_hub"
    if is_model_garden_export(path):  # a TF2 Hub encoder by Model Garden (model_garden_files)
        return "model_garden"
    if is_saved_model(path):
        raise CheckpointFileError(
            f"{path}: a SavedModel without {MODULE_MARKER}: neither a checkpoint nor a TF1 Hub "
            "module (an albert-tf encoder export goes to --albert_hub_module_handle)")
    import tensorflow as tf

    from albert_tf.checkpoints.original import TF2_MARKER, resolve_checkpoint_path

    reader = tf.compat.v1.train.NewCheckpointReader(resolve_checkpoint_path(path))
    names = reader.get_variable_to_shape_map()
    if TF2_MARKER in names:
        return "model_garden_checkpoint" if is_model_garden_checkpoint(names) else "ours"
    if "bert/embeddings/word_embeddings" in names:
        return "original"
    raise ValueError(f"{path}: neither an original ALBERT checkpoint, a TF2 object checkpoint, "
                     "a Hugging Face directory nor a TF1 Hub module")


def is_original_checkpoint(path: str) -> bool:
    """True when `path` (prefix or directory) holds an original-release TF1 checkpoint."""
    return checkpoint_kind(path) == "original"
