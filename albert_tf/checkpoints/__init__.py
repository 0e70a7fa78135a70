"""Checkpoints in every format ALBERT weights come in, over one strict loader and report.

* `original` — the original release's TF1 names (faithfulness §3): `NAME_TABLE`,
  `load_original_checkpoint`, `save_original_checkpoint`.
* `hf` — Hugging Face directories (config.json + model.safetensors): `HF_NAME_TABLE`,
  `load_hf_checkpoint`, `save_hf_checkpoint`, every head both ways.
* `ours` — our training checkpoints, by variable path: `load_tf2_checkpoint`.
* `loading` — `load_checkpoint` / `validate_checkpoint` dispatch on `checkpoint_kind`;
  every `--init_checkpoint` goes through them.
Each loader names what is missing, unused or mis-shaped and returns a `LoadReport`.
"""

from albert_tf.checkpoints.hf import (DEFAULT_HF_CLASS, hf_variable_map, load_hf_checkpoint,
                                      read_hf_model_config, save_hf_checkpoint)
from albert_tf.checkpoints.hf_files import spm_model_of
from albert_tf.checkpoints.hf_names import HF_CLASSES, HF_NAME_TABLE
from albert_tf.checkpoints.kinds import (KINDS, checkpoint_kind, is_hf_checkpoint,
                                         is_original_checkpoint)
from albert_tf.checkpoints.loading import (load_checkpoint, named_variables,
                                           restore_model_weights, validate_checkpoint)
from albert_tf.checkpoints.model_parts import (ENCODER_PARTS, HEAD_PARTS, part_owners,
                                               unread_parts)
from albert_tf.checkpoints.original import (NAME_TABLE, SKIPPED_PATTERNS, load_original_checkpoint,
                                            resolve_checkpoint_path, save_original_checkpoint,
                                            variable_map, write_name_based_checkpoint)
from albert_tf.checkpoints.ours import load_tf2_checkpoint
from albert_tf.checkpoints.report import (CheckpointFileError, CheckpointMismatchError,
                                          LoadReport)

__all__ = [
    "CheckpointFileError", "CheckpointMismatchError", "DEFAULT_HF_CLASS", "ENCODER_PARTS",
    "HEAD_PARTS", "HF_CLASSES", "HF_NAME_TABLE", "KINDS", "LoadReport", "NAME_TABLE",
    "SKIPPED_PATTERNS", "checkpoint_kind", "hf_variable_map", "is_hf_checkpoint",
    "is_original_checkpoint", "load_checkpoint", "load_hf_checkpoint",
    "load_original_checkpoint", "load_tf2_checkpoint", "named_variables",
    "part_owners", "read_hf_model_config", "resolve_checkpoint_path", "restore_model_weights",
    "save_hf_checkpoint", "save_original_checkpoint", "spm_model_of", "unread_parts",
    "validate_checkpoint", "variable_map", "write_name_based_checkpoint",
]
