"""TF-Hub-style SavedModel exports (encoder, MLM, preprocessing) and loading them back."""

from albert_tf.export.encoder_export import save_encoder_export
from albert_tf.export.loading import HubEncoder, is_encoder_export, load_export_config
from albert_tf.export.preprocessing import AlbertPreprocessor, save_preprocessing_export
from albert_tf.export.serving import load_serving

__all__ = ["AlbertPreprocessor", "HubEncoder", "is_encoder_export", "load_export_config",
           "load_serving", "save_encoder_export", "save_preprocessing_export"]
