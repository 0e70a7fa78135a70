"""Plots training curves from the TensorBoard event files a run wrote, into one PNG.

    python -m albert_tf.plot_curves --event_dir=out/pretrain --output=out/curves.png

Reads every scalar under `--event_dir` (train and eval writers) and draws the chosen tags
against the step: by default the total loss and the MLM and SOP accuracies.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
from collections import defaultdict

import tensorflow as tf
from absl import app, flags

from albert_tf import cli
from albert_tf.atomic_files import atomic_file

FLAGS = flags.FLAGS
flags.DEFINE_string("event_dir", None, "Directory holding TensorBoard event files (searched recursively).")
flags.DEFINE_string("output", None, "PNG file to write.")
flags.DEFINE_list("tags", ["loss", "masked_lm_accuracy", "sentence_order_accuracy"],
                  "Scalar tags to plot, one panel each.")
flags.mark_flags_as_required(["event_dir", "output"])


def read_scalars(log_dir: str) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{run (subdirectory): {tag: [(step, value), ...]}} from every event file under log_dir."""
    runs: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for directory, _, files in tf.io.gfile.walk(log_dir):
        for name in sorted(f for f in files if "tfevents" in f):
            run = os.path.relpath(directory, log_dir)
            for record in tf.data.TFRecordDataset(os.path.join(directory, name)):
                event = tf.compat.v1.Event.FromString(record.numpy())
                for value in event.summary.value:
                    if value.HasField("tensor"):
                        number = float(tf.make_ndarray(value.tensor))
                    elif value.HasField("simple_value"):
                        number = value.simple_value
                    else:
                        continue
                    runs[run][value.tag].append((int(event.step), number))
    return {run: {tag: sorted(points) for tag, points in tags.items()} for run, tags in runs.items()}


def plot(scalars: dict, tags: list[str], output: str, title: str = "") -> list[str]:
    """Draws one panel per tag (every run that has it); returns the tags actually found."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = [t for t in tags if any(t in run for run in scalars.values())]
    if not found:
        raise ValueError(f"none of the tags {tags} were written; found {sorted({t for r in scalars.values() for t in r})}")
    figure, axes = plt.subplots(1, len(found), figsize=(5 * len(found), 3.6), squeeze=False)
    for axis, tag in zip(axes[0], found):
        for run, run_tags in sorted(scalars.items()):
            if tag in run_tags:
                steps, values = zip(*run_tags[tag])
                axis.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3,
                          label=run if run != "." else "train")
        axis.set_title(tag)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
        axis.legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    with atomic_file(output, "wb") as f:
        figure.savefig(f, format="png", dpi=110)
    plt.close(figure)
    return found


def run() -> None:
    if not tf.io.gfile.isdir(FLAGS.event_dir):
        raise FileNotFoundError(f"--event_dir={FLAGS.event_dir}: no such directory")
    scalars = read_scalars(FLAGS.event_dir)
    found = plot(scalars, FLAGS.tags, FLAGS.output, title=os.path.basename(os.path.normpath(FLAGS.event_dir)))
    print(f"wrote {FLAGS.output} ({', '.join(found)})")


def main(argv: list[str]) -> None:
    cli.run_script("plot_curves", argv, run)


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("plot_curves"))
