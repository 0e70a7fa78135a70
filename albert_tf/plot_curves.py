"""Plots training curves from the TensorBoard event files a run wrote, into one PNG.

    python -m albert_tf.plot_curves --event_dir=out/pretrain --output=out/curves.png

Reads every scalar under `--event_dir` (train and eval writers) and draws the chosen tags
against the step: by default the total loss and the MLM and SOP accuracies. Each panel has
its y-axis label; accuracies get a fixed [0, 1] axis (SOP with its 0.5 chance line), losses
start at 0; training is a line, eval points are markers; the title names the run.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
from absl import flags

from albert_tf import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("event_dir", None, "Directory holding TensorBoard event files (searched recursively).")
flags.DEFINE_string("output", None, "PNG file to write.")
flags.DEFINE_list("tags", ["loss", "masked_lm_accuracy", "sentence_order_accuracy"],
                  "Scalar tags to plot, one panel each.")
flags.DEFINE_string("title", None, "Figure title. Default: 'Training curves of <event_dir>'.")
flags.mark_flags_as_required(["event_dir", "output"])


def run() -> None:
    """The flags → `experiments.curves.read_scalars` and `plot`."""
    import tensorflow as tf

    from albert_tf.experiments.curves import plot, read_scalars

    if not tf.io.gfile.isdir(FLAGS.event_dir):
        raise FileNotFoundError(f"--event_dir={FLAGS.event_dir}: no such directory")
    scalars = read_scalars(FLAGS.event_dir)
    title = FLAGS.title or f"Training curves of {os.path.normpath(FLAGS.event_dir)}"
    found = plot(scalars, FLAGS.tags, FLAGS.output, title=title)
    print(f"wrote {FLAGS.output} ({', '.join(found)})")


def console_main() -> None:
    """`albert-plot-curves` (console script) and `python -m albert_tf.plot_curves`. A missing
    event directory or tag: one line, exit 1, nothing written."""
    cli.start("plot_curves", run, __name__)


if __name__ == "__main__":
    console_main()
