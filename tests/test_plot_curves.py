"""plot_curves reads the loop's scalar events back and draws the PNG."""

import tensorflow as tf

from albert_tf.plot_curves import plot, read_scalars
from albert_tf.training.summaries import write_scalars


def test_reads_written_scalars_and_plots(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path / "run"))
    for step, loss in [(10, 3.0), (20, 2.5), (30, 2.0)]:
        write_scalars(writer, step, {"loss": loss, "masked_lm_accuracy": 1.0 / loss})
    scalars = read_scalars(str(tmp_path))
    assert scalars["run"]["loss"] == [(10, 3.0), (20, 2.5), (30, 2.0)]
    output = tmp_path / "curves.png"
    found = plot(scalars, ["loss", "masked_lm_accuracy", "sentence_order_accuracy"], str(output))
    assert found == ["loss", "masked_lm_accuracy"]
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
