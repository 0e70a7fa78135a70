"""Pretraining curves of a table's models in one PNG: a panel per quantity, a line per model."""

from __future__ import annotations

from typing import Mapping, Sequence

from albert_tf.runtime.atomic_files import atomic_file

PANELS = {"loss": "training loss", "masked_lm_accuracy": "masked-LM accuracy (training window)",
          "sentence_order_accuracy": "sentence-task accuracy (training window)"}


def plot_runs(curves: Mapping[str, Sequence[Mapping[str, float]]], output: str, title: str) -> bool:
    """Draws `{label: [{"step", tag: value}, ...]}`; False (nothing written) without points."""
    curves = {label: points for label, points in curves.items() if points}
    if not curves:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = [t for t in PANELS if any(t in p for points in curves.values() for p in points)]
    figure, axes = plt.subplots(1, len(tags), figsize=(5 * len(tags), 3.8), squeeze=False)
    for axis, tag in zip(axes[0], tags):
        for label, points in curves.items():
            xy = [(p["step"], p[tag]) for p in points if tag in p]
            if xy:
                axis.plot(*zip(*xy), label=label, linewidth=1.2)
        axis.set_title(PANELS[tag], fontsize=10)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    with atomic_file(output, "wb") as f:
        figure.savefig(f, format="png", dpi=90)
    plt.close(figure)
    return True
