"""Checkpoints in every format ALBERT weights come in, over one strict loader and report.

* `original` — the original release's TF1 names (faithfulness §3): `NAME_TABLE`,
  `load_original_checkpoint`, `save_original_checkpoint`.
* `hf` — Hugging Face directories (config.json + model.safetensors): `HF_NAME_TABLE`,
  `load_hf_checkpoint`, `save_hf_checkpoint`, every head both ways; `hf_config` maps their
  config.json to ours and back.
* `ours` — our own format ("ours"): its key layout and `load_our_checkpoint`.
* `tf1_hub` — the original's TF1 Hub modules (faithfulness §11): `read_tf1_hub_module`,
  `module_config`, `load_tf1_hub_module` (the original loader on the module's variables);
  `tf1_hub_files.is_tf1_hub_module` needs no TensorFlow.
* `keras_hub` — keras-hub presets (AlbertBackbone, AlbertTextClassifier), read and written
  without keras-hub: `load_keras_hub_preset`, `save_keras_hub_preset`;
  `keras_hub_files.is_keras_hub_preset` needs no TensorFlow.
* `model_garden` — TF Model Garden's ALBERT: TF2 Hub encoder exports ("model_garden") and
  object checkpoints ("model_garden_checkpoint"): `read_model_garden`, `model_garden_config`,
  `load_model_garden` (mapped onto the original's names, `model_garden_names`).
* `encoder_exports` — our own encoder exports (`export_tfhub`) read back to fine-tune:
  `load_keras_encoder` (into `AlbertEncoder`), `HubEncoder` (the SavedModel in place),
  `is_encoder_export`, `load_export_config`.
* `kinds` — the one "what kind is this path" rule: `checkpoint_kind`, `is_hf_checkpoint`.
* `loading` — `load_checkpoint` / `validate_checkpoint` dispatch on the kind;
  `warm_starting.warm_start` — the one warm start every task and export calls.
Each loader names what is missing, unused or mis-shaped and returns a `LoadReport`.
Names are imported on first use, so `is_hf_checkpoint` and `is_tf1_hub_module` are usable
before TensorFlow loads.
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names

_EXPORTS = {
    "DEFAULT_HF_CLASS": "hf", "hf_variable_map": "hf", "load_hf_checkpoint": "hf",
    "read_hf_model_config": "hf", "save_hf_checkpoint": "hf",
    "load_keras_hub_preset": "keras_hub", "read_keras_hub_preset": "keras_hub",
    "save_keras_hub_preset": "keras_hub", "is_keras_hub_preset": "keras_hub_files",
    "spm_model_of": "hf_files",
    "HF_CLASSES": "hf_names", "HF_NAME_TABLE": "hf_names",
    "HubEncoder": "encoder_exports", "is_encoder_export": "encoder_exports",
    "load_export_config": "encoder_exports", "load_keras_encoder": "encoder_exports",
    "KINDS": "kinds", "KIND_NAMES": "kinds", "checkpoint_kind": "kinds",
    "is_hf_checkpoint": "kinds", "is_original_checkpoint": "kinds",
    "load_checkpoint": "loading", "named_variables": "loading", "validate_checkpoint": "loading",
    "ENCODER_PARTS": "model_parts", "HEAD_PARTS": "model_parts", "part_owners": "model_parts",
    "unread_parts": "model_parts",
    "NAME_TABLE": "original", "SKIPPED_PATTERNS": "original",
    "load_original_checkpoint": "original", "resolve_checkpoint_path": "original",
    "save_original_checkpoint": "original", "variable_map": "original",
    "write_name_based_checkpoint": "original",
    "keyed_variables": "ours", "load_our_checkpoint": "ours",
    "TF1HubModule": "tf1_hub", "load_tf1_hub_module": "tf1_hub", "module_config": "tf1_hub",
    "read_tf1_hub_module": "tf1_hub", "is_tf1_hub_module": "tf1_hub_files",
    "load_model_garden": "model_garden", "model_garden_config": "model_garden",
    "read_model_garden": "model_garden", "is_model_garden_export": "model_garden_files",
    "CheckpointFileError": "report", "CheckpointMismatchError": "report", "LoadReport": "report",
    "RestoreReport": "warm_starting", "head_parts": "warm_starting", "warm_start": "warm_starting",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS)
