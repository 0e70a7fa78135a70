"""plot_curves reads the loop's scalar events back and draws the PNG: each panel's y-axis
labelled, the run named in the title, accuracies on a fixed [0, 1] axis, SOP with its 0.5
chance line, eval points as markers beside the training line (checked on matplotlib's
objects, not pixels)."""

import matplotlib.pyplot as plt
import pytest
import tensorflow as tf

from albert_tf.experiments.curves import draw, plot, read_scalars
from albert_tf.training.summaries import write_scalars

TAGS = ["loss", "masked_lm_accuracy", "sentence_order_accuracy"]


def write_run(directory, points):
    writer = tf.summary.create_file_writer(str(directory))
    for step, values in points:
        write_scalars(writer, step, values)
    writer.flush()


@pytest.fixture
def run_dir(tmp_path):
    """A pretraining run's layout: train/ every 10 steps, eval/ at step 30 only."""
    write_run(tmp_path / "pretrain" / "train", [
        (10, {"loss": 3.0, "masked_lm_accuracy": 0.10, "sentence_order_accuracy": 0.52}),
        (20, {"loss": 2.5, "masked_lm_accuracy": 0.20, "sentence_order_accuracy": 0.49}),
        (30, {"loss": 2.0, "masked_lm_accuracy": 0.30, "sentence_order_accuracy": 0.55})])
    write_run(tmp_path / "pretrain" / "eval", [
        (30, {"loss": 2.2, "masked_lm_accuracy": 0.25, "sentence_order_accuracy": 0.51})])
    return tmp_path / "pretrain"


def test_reads_written_scalars_and_plots(run_dir, tmp_path):
    scalars = read_scalars(str(run_dir))
    assert scalars["train"]["loss"] == [(10, 3.0), (20, 2.5), (30, 2.0)]
    assert scalars["eval"]["masked_lm_accuracy"] == [(30, pytest.approx(0.25))]
    output = tmp_path / "curves.png"
    found = plot(scalars, [*TAGS, "next_sentence_accuracy"], str(output), title="run")
    assert found == TAGS
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_labels_ranges_chance_line_and_markers(run_dir):
    figure, found = draw(read_scalars(str(run_dir)), TAGS, title="Training curves of demo/pretrain")
    try:
        assert found == TAGS
        assert figure._suptitle.get_text() == "Training curves of demo/pretrain"
        loss, mlm, sop = figure.axes
        assert [a.get_ylabel() for a in figure.axes] == [
            "total loss (MLM + sentence task)", "MLM accuracy", "SOP accuracy"]
        assert all(a.get_xlabel() == "step" for a in figure.axes)
        # Accuracies: [0, 1] whatever the data's spread (0.49..0.55 would fill a free axis).
        assert mlm.get_ylim() == (0.0, 1.0) and sop.get_ylim() == (0.0, 1.0)
        assert loss.get_ylim()[0] == 0.0 and loss.get_ylim()[1] >= 3.0
        # SOP: the chance line at 0.5 across the panel; MLM has none.
        chance = [line for line in sop.get_lines() if line.get_label().startswith("chance")]
        assert len(chance) == 1 and list(chance[0].get_ydata()) == [0.5, 0.5]
        assert not [line for line in mlm.get_lines() if line.get_label().startswith("chance")]
        for axis in figure.axes:
            lines = {line.get_label(): line for line in axis.get_lines()}
            assert list(lines["train"].get_xdata()) == [10, 20, 30]
            assert list(lines["eval"].get_xdata()) == [30]
            assert lines["eval"].get_marker() == "o" and lines["eval"].get_markersize() >= 5
            legend = [t.get_text() for t in axis.get_legend().get_texts()]
            assert legend[:2] == ["train", "eval"]
        assert list(lines["eval"].get_ydata()) == [pytest.approx(0.51)]
    finally:
        plt.close(figure)


def test_no_known_tag_is_an_error(run_dir):
    with pytest.raises(ValueError, match="none of the tags"):
        draw(read_scalars(str(run_dir)), ["bleu"])
