"""tf.data options of the passes that read a dataset once: evaluation and prediction.

Such a pass creates a fresh iterator each time. With tf.data's autotuning on, about half of
those passes ran 1.45–1.8× slower *throughout* on a 2-core Xeon (its autotuner competing with
the model for the cores; a bf16 ALBERT-base at batch 8: 511 vs 295 ms a batch in
`Trainer.evaluate`'s loop, 512 vs 350 in `Predictor.run`), and none with it off. A pass that
reads each batch once has nothing to tune (benchmarks/RESULTS.md, "Prediction runs without
tf.data's autotuner"). The training iterator keeps its options (no slow pass measured there).
"""

from __future__ import annotations

import tensorflow as tf


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data's autotuning off (AUTOTUNE parallelism and buffers take fixed
    defaults); the dataset's other options are kept."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
