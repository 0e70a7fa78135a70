"""Writing every serving format: TF-Hub-style SavedModel exports (encoder, MLM, preprocessing)
and their serving artifacts (frozen graph, TFLite, OpenVINO IR, ONNX). Serving them is
`albert_tf.serving` (`load_serving`); reading an encoder export back for fine-tuning is
`albert_tf.checkpoints.encoder_exports`.

`export_tfhub`'s library half is `albert_tf.export.tfhub`; the choices the exports accept are
`albert_tf.export.choices`. Names are imported on first use, so `albert_tf.export.choices`
(the scripts' --tflite_quantization flag) loads without TensorFlow.
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names

_EXPORTS = {
    "save_encoder_export": "encoder_export",
    "AlbertPreprocessor": "preprocessing", "save_preprocessing_export": "preprocessing",
}
# Names that moved out (deprecated aliases, kept one release): each use warns once.
_MOVED = {
    "HubEncoder": "albert_tf.checkpoints.encoder_exports",
    "is_encoder_export": "albert_tf.checkpoints.encoder_exports",
    "load_export_config": "albert_tf.checkpoints.encoder_exports",
    "load_keras_encoder": "albert_tf.checkpoints.encoder_exports",
    "load_serving": "albert_tf.serving",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS, _MOVED)
