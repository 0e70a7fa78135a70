r"""The original's export_checkpoints: a model-only copy of a checkpoint (faithfulness §11.3).

    python -m albert_tf.export_checkpoints --albert_directory=albert_base \
        --checkpoint_name=model.ckpt-best --export_path=out/albert_base/model.ckpt

Reads `albert_config.json` and the checkpoint `--checkpoint_name` of `--albert_directory`
(the released tarballs' layout), restores the encoder with the MLM and SOP heads by their
TF1 names (optimizer slots are skipped), and writes them with a fresh `global_step` of 0
to the prefix `--export_path`, as the original does. `--do_lower_case` is accepted, unused
there and here. A mismatch is one line on stderr and exit status 1; nothing is written.
For other formats and heads use `python -m albert_tf.convert`.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's log)

import sys
from typing import Sequence

from absl import app, flags, logging

from albert_tf import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_directory", None,
                    "Directory with albert_config.json and the checkpoint (a released tarball).")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best",
                    "Checkpoint prefix in --albert_directory.")
flags.DEFINE_bool("do_lower_case", True, "Accepted for the original's command lines; unused.")
flags.DEFINE_string("export_path", None, "Prefix of the checkpoint to write.")
flags.mark_flags_as_required(["albert_directory", "export_path"])


def main(argv: Sequence[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    from albert_tf.checkpoints.conversion import export_model_checkpoint  # TensorFlow only now

    try:
        path = export_model_checkpoint(FLAGS.albert_directory, FLAGS.checkpoint_name,
                                       FLAGS.export_path)
    except (ValueError, FileNotFoundError) as e:  # config and checkpoint errors are ValueErrors
        logging.debug("traceback", exc_info=True)
        print(f"export_checkpoints: error: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"wrote {path}")


if __name__ == "__main__":
    app.run(main, flags_parser=cli.flags_parser("export_checkpoints"))
