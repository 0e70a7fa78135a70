"""TF Model Garden ALBERT artifacts on disk, told apart without TensorFlow.

Two layouts (faithfulness §11.4): a TF2 Hub encoder (`albert_en_base/3` and its sizes on TF Hub /
Kaggle), the SavedModel Model Garden's `export_tfhub_lib.export_model` writes (`saved_model.pb`,
`variables/`, `assets/<sp_model_file>`, no `tfhub_module.pb`, no `assets/albert_config.json`),
and the object checkpoints of its `AlbertEncoder` (`tf.train.Checkpoint(encoder=...)`, what its
`tf2_albert_encoder_checkpoint_converter` and `train.py` write), told by their entries. Paths and
bytes only, so the kind rule can ask before TensorFlow is imported; reading is
`checkpoints.model_garden`.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.tf1_hub_files import (ASSETS_DIR, CONFIG_ASSET, SAVED_MODEL_FILE,
                                                 is_saved_model, is_tf1_hub_module)
from albert_tf.runtime import paths

# The embedding variable every Model Garden encoder export names in its SavedObjectGraph.
EXPORT_MARKER = b"word_embeddings/embeddings"
# An object-checkpoint entry only Model Garden's TransformerEncoderBlock has.
CHECKPOINT_MARKER = "/_attention_layer/_query_dense/kernel/"


def is_model_garden_export(path: str | os.PathLike | None) -> bool:
    """True for a TF2 SavedModel holding a Model Garden encoder (its variable names), not a TF1
    Hub module and not an albert-tf export (which carries `assets/albert_config.json`)."""
    if not is_saved_model(path) or is_tf1_hub_module(path):
        return False
    path = os.fspath(path)
    if paths.isfile(paths.join(path, ASSETS_DIR, CONFIG_ASSET)):
        return False
    return EXPORT_MARKER in paths.read_bytes(paths.join(path, SAVED_MODEL_FILE))


def is_model_garden_checkpoint(entries: object) -> bool:
    """True when an object checkpoint's entry names hold a Model Garden encoder block."""
    return any(CHECKPOINT_MARKER in name for name in entries)
