"""Moved to `albert_tf.checkpoints.encoder_exports`; this alias warns once and goes in the next release."""

from albert_tf.runtime.lazy_names import moved_module

moved_module(__name__, "albert_tf.checkpoints.encoder_exports")
