"""Pre-training data: n-gram masking, record layout and tf.data input pipelines.

`pretraining_dataset` (the trainer's entry point) needs TensorFlow and is imported on first
use, so that `create_pretraining_data` and its worker processes never load TensorFlow.

Example:
    >>> from albert_tf.data import pretraining_dataset
    >>> ds = pretraining_dataset("out/*.tfrecord", batch_size=32, max_seq_length=128,
    ...                          max_predictions_per_seq=20)
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names
from albert_tf.data.features import DYNAMIC, RECORD_KINDS, STATIC, TRAINER_FEATURES
from albert_tf.data.masking import MaskingOptions, mask_batch

__all__ = ["DYNAMIC", "MaskingOptions", "RECORD_KINDS", "STATIC", "TRAINER_FEATURES", "mask_batch",
           "mask_batch_tf", "parse_spec", "pretraining_dataset", "resolve_files"]

_LAZY = {"pretraining_dataset": "pipeline", "parse_spec": "pipeline",
         "resolve_files": "record_checks", "mask_batch_tf": "masking_tf"}


__getattr__ = lazy_names(__name__, _LAZY)
