"""Moved to `albert_tf.serving.manifest`; this alias warns once and goes in the next release."""

from albert_tf.runtime.lazy_names import moved_module

moved_module(__name__, "albert_tf.serving.manifest")
