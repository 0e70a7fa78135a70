"""TensorBoard scalar summaries without importing the tensorboard package.

`tf.summary.scalar` needs tensorboard installed; writing the tensor with the scalars
plugin's metadata ourselves produces the same event records, so training never depends on
it (viewing them does).
"""

from __future__ import annotations

from typing import Mapping

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
    data_class=summary_pb2.DATA_CLASS_SCALAR)


def write_scalars(writer: tf.summary.SummaryWriter, step: int, values: Mapping[str, float]) -> None:
    """One scalar event per entry of `values` at `step`, flushed to disk."""
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.write(name, tf.constant(float(value), tf.float32),
                             metadata=_SCALAR_METADATA.SerializeToString())
    writer.flush()
