"""Training curves from the TensorBoard event files a run wrote, drawn into one PNG.

`read_scalars` reads every scalar under a run directory (train and eval writers); `plot` draws
the chosen tags against the step (`python -m albert_tf.plot_curves` is its command line). Each
panel has its y-axis label; accuracies get a fixed [0, 1] axis (SOP with its 0.5 chance line),
losses start at 0; training is a line, eval points are markers.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import TYPE_CHECKING

import tensorflow as tf

from albert_tf.runtime.atomic_files import atomic_file

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


# y-axis labels of the loop's scalar tags (other tags are labelled with their name).
LABELS = {
    "loss": "total loss (MLM + sentence task)",
    "masked_lm_loss": "MLM loss",
    "masked_lm_accuracy": "MLM accuracy",
    "sentence_order_loss": "SOP loss",
    "sentence_order_accuracy": "SOP accuracy",
    "next_sentence_loss": "NSP loss",
    "next_sentence_accuracy": "NSP accuracy",
    "learning_rate": "learning rate",
    "gradient_norm": "gradient global norm",
}
# Accuracy of guessing, drawn as a dotted line (both sentence tasks are balanced binary).
CHANCE = {"sentence_order_accuracy": 0.5, "next_sentence_accuracy": 0.5}


def _train_first(item: tuple[str, dict]) -> tuple[bool, str]:
    return item[0] not in (".", "train"), item[0]


def is_accuracy(tag: str) -> bool:
    """Accuracies get a fixed [0, 1] axis, so noise of a few points does not look like a cliff."""
    return tag.endswith("accuracy")


def draw(scalars: dict, tags: list[str], title: str = "") -> tuple["Figure", list[str]]:
    """(matplotlib Figure, tags found): one panel per tag, every run that has it; the training
    run as a line, the other runs (eval) as markers, the chance level where there is one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = [t for t in tags if any(t in run for run in scalars.values())]
    if not found:
        raise ValueError(f"none of the tags {tags} were written; found {sorted({t for r in scalars.values() for t in r})}")
    figure, axes = plt.subplots(1, len(found), figsize=(5 * len(found), 3.8), squeeze=False)
    for axis, tag in zip(axes[0], found):
        label = LABELS.get(tag, tag)
        for run, run_tags in sorted(scalars.items(), key=_train_first):
            if tag not in run_tags:
                continue
            steps, values = zip(*run_tags[tag])
            name = "train" if run == "." else run
            if name == "train":
                axis.plot(steps, values, marker="." if len(steps) < 30 else None, label=name,
                          zorder=2)
            else:  # eval: few points, each one visible beside the training line
                axis.plot(steps, values, marker="o", markersize=6, linestyle="--", label=name,
                          zorder=3)
        if tag in CHANCE:
            axis.axhline(CHANCE[tag], color="0.4", linestyle=":", linewidth=1.2,
                         label=f"chance ({CHANCE[tag]:g})", zorder=1)
        if is_accuracy(tag):
            axis.set_ylim(0.0, 1.0)
        else:
            values = [v for run in scalars.values() for _, v in run.get(tag, [])]
            if min(values) >= 0:  # losses, norms, rates: from 0, with headroom above the top
                axis.set_ylim(0.0, max(values) * 1.05 or 1.0)
        axis.set_ylabel(label)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
        axis.legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure, found


def plot(scalars: dict, tags: list[str], output: str, title: str = "") -> list[str]:
    """Draws one panel per tag (every run that has it) into the PNG `output`; returns the
    tags actually found."""
    import matplotlib.pyplot as plt

    figure, found = draw(scalars, tags, title)
    with atomic_file(output, "wb") as f:  # its directory made if missing (local or a bucket)
        figure.savefig(f, format="png", dpi=110)
    plt.close(figure)
    return found
