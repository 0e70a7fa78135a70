"""tf.data options of the passes that read a dataset once: evaluation and prediction.

Such a pass creates a fresh iterator each time. With tf.data's autotuning on, about half of
those passes ran 1.45–1.8× slower *throughout* on a 2-core Xeon (its autotuner competing with
the model for the cores; a bf16 ALBERT-base at batch 8: 511 vs 295 ms a batch in
`Trainer.evaluate`'s loop, 512 vs 350 in `Predictor.run`), and none with it off. A pass that
reads each batch once has nothing to tune (benchmarks/RESULTS.md, "Prediction runs without
tf.data's autotuner"). The training iterator keeps the autotuner (no slow pass measured there),
unless `TRAINING_AUTOTUNE` is set False.

Why a process that trains many times may want it off: in TF 2.21, deleting an autotuned
iterator cancels its autotuner thread with a race (the thread can re-check for cancellation
before it is marked, and sleeps out its period: up to 60 s). About one deletion in three
blocked for the rest of the period in a probe (`del` of a 12 s-old iterator: 8.6 s). A
command-line run frees its training iterator at exit, where nothing waits; a process that
trains again and again (a notebook, a sweep, the test suite: 6 minutes of such waits in one
run) collects the old iterators as it goes, each deletion a chance of a wait.
"""

from __future__ import annotations

import tensorflow as tf

TRAINING_AUTOTUNE = True  # tf.data's autotuner on the training iterator (see above)


def training_options() -> tf.data.Options:
    """The training iterator's options: stateful inputs (a tf.random map) still checkpoint,
    with a warning that their random state is not saved; the autotuner per TRAINING_AUTOTUNE."""
    options = tf.data.Options()
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.WARN
    if not TRAINING_AUTOTUNE:
        options.autotune.enabled = False
    return options


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data's autotuning off (AUTOTUNE parallelism and buffers take fixed
    defaults); the dataset's other options are kept."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
