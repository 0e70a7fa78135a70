"""tf.data options of the passes that read a dataset once: evaluation and prediction.

Such a pass creates a fresh iterator each time. With tf.data's autotuning on, about half of
those passes ran 1.45–1.8× slower *throughout* on a 2-core Xeon (its autotuner competing with
the model for the cores; a bf16 ALBERT-base at batch 8: 511 vs 295 ms a batch in
`Trainer.evaluate`'s loop, 512 vs 350 in `Predictor.run`), and none with it off. A pass that
reads each batch once has nothing to tune (benchmarks/RESULTS.md, "Prediction runs without
tf.data's autotuner"). The training iterator keeps the autotuner (no slow pass measured there),
unless `TRAINING_AUTOTUNE` is set False.

Why a process that trains many times may want it off: in TF 2.21, deleting an autotuned
iterator does not always wake its autotuner thread, which then sleeps out its current period
(it doubles up to 60 s) while the deletion waits for it: a race, one deletion in three in a
probe (`del` of a 12 s-old iterator: 8.6 s; native stacks: ~RootDataset::Iterator waiting on
the thread in Model::OptimizeLoop's timed wait). A command-line run frees its training
iterator at exit, where nothing waits; a process that trains again and again (a notebook, a
sweep, the test suite: 6–14 minutes of such waits in a full run) frees old iterators as it
goes, each a chance of a wait.
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
