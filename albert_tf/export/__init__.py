"""Every serving format: TF-Hub-style SavedModel exports (encoder, MLM, preprocessing), their
serving artifacts (frozen graph, TFLite, OpenVINO IR), and one loader for all of them.

`export_tfhub`'s library half is `albert_tf.export.tfhub`; the choices the exports accept are
`albert_tf.export.choices`. Names are imported on first use, so `albert_tf.export.choices`
(the scripts' --tflite_quantization flag) loads without TensorFlow.
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names

_EXPORTS = {
    "save_encoder_export": "encoder_export",
    "HubEncoder": "loading", "is_encoder_export": "loading", "load_export_config": "loading",
    "load_keras_encoder": "loading",
    "AlbertPreprocessor": "preprocessing", "save_preprocessing_export": "preprocessing",
    "load_serving": "serving",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS)
