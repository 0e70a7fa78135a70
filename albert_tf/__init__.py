"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / Keras 3, faithful to the original release."""

from albert_tf.config import PRESET_NAMES, SHARING_MODES, AlbertConfig, ConfigError

__version__ = "0.1.0"
__all__ = ["AlbertConfig", "ConfigError", "PRESET_NAMES", "SHARING_MODES", "__version__"]
