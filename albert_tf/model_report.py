"""Builds the released ALBERT sizes, prints their parameter table, and round-trips a
checkpoint in the original release's format.

    python -m albert_tf.model_report --output_dir=/tmp/albert_report [--preset=albert_base_v2]

What it shows: the presets build, their parameter counts are the original's (faithfulness §1.3),
and a checkpoint written with the original's TF1 names restores to identical outputs.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.config import PRESET_NAMES

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where the original-format checkpoint is written.")
flags.DEFINE_enum("preset", "albert_base_v2", PRESET_NAMES, "Preset used for the checkpoint round trip.")
flags.DEFINE_boolean("all_presets", True, "Build every preset for the parameter table.")
flags.mark_flag_as_required("output_dir")


def run() -> None:
    """The flags → `experiments.model_report.model_report` (TensorFlow only now)."""
    from albert_tf.experiments.model_report import model_report

    model_report(FLAGS.output_dir, FLAGS.preset, FLAGS.all_presets)


def console_main() -> None:
    """`albert-model-report` (console script) and `python -m albert_tf.model_report`. A round
    trip that changed the outputs, or a full disk: one line, exit 1."""
    cli.start("model_report", run, __name__)


if __name__ == "__main__":
    console_main()
