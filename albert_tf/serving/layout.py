"""The file names a server reads, said once: an export's `serving.json`, its frozen `serving/`
SavedModel, what makes a directory a SavedModel and where a SavedModel keeps its config.

`albert_tf/export/layout.py` lists these with every other file the writers make (it takes them
from here, a floor below the writers). Standard library only: the manifest reader and the loader
import it before any engine starts.
"""

from __future__ import annotations

import os

from albert_tf.checkpoints.tf1_hub_files import ASSETS_DIR, CONFIG_ASSET, SAVED_MODEL_FILE

MANIFEST = "serving.json"
SERVING_DIR = "serving"             # the frozen serving SavedModel inside every export
SAVED_MODEL_PB = SAVED_MODEL_FILE   # what makes a directory a SavedModel (said where the
                                    # checkpoint readers, a floor below, need it too)


def config_asset_path(saved_model_dir: str) -> str:
    """Where a SavedModel of ours keeps its AlbertConfig (`assets/albert_config.json`)."""
    return os.path.join(os.fspath(saved_model_dir), ASSETS_DIR, CONFIG_ASSET)


__all__ = ["CONFIG_ASSET", "MANIFEST", "SAVED_MODEL_PB", "SERVING_DIR", "config_asset_path"]
