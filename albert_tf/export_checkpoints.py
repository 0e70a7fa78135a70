r"""The original's export_checkpoints: a model-only copy of a checkpoint (faithfulness §11.3).

    python -m albert_tf.export_checkpoints --albert_directory=albert_base \
        --checkpoint_name=model.ckpt-best --export_path=out/albert_base/model.ckpt

Reads `albert_config.json` and the checkpoint `--checkpoint_name` of `--albert_directory`
(the released tarballs' layout), restores the encoder with the MLM and SOP heads by their
TF1 names (optimizer slots are skipped), and writes them with a fresh `global_step` of 0
to the prefix `--export_path`, as the original does. `--albert_directory` may also be one of
the original's TF1 Hub modules, unpacked (its config asset and variables are read), or a TF
Model Garden TF2 Hub encoder (its encoder and masked-LM head, faithfulness §11.4).
`--do_lower_case` is accepted, unused there and here. A mismatch is one line on stderr and
exit status 1; nothing is written. For other formats and heads use `python -m albert_tf.convert`.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's log)

from absl import flags

from albert_tf import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_directory", None,
                    "Directory with albert_config.json and the checkpoint (a released tarball), "
                    "or a TF1 Hub module or Model Garden TF2 Hub encoder directory.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best",
                    "Checkpoint prefix in --albert_directory.")
flags.DEFINE_bool("do_lower_case", True, "Accepted for the original's command lines; unused.")
flags.DEFINE_string("export_path", None, "Prefix of the checkpoint to write.")
flags.mark_flags_as_required(["albert_directory", "export_path"])


def run() -> None:
    """The flags → `checkpoints.conversion.export_model_checkpoint` (TensorFlow only now),
    which logs what it read and wrote, once."""
    from albert_tf.checkpoints.conversion import export_model_checkpoint

    export_model_checkpoint(FLAGS.albert_directory, FLAGS.checkpoint_name, FLAGS.export_path)


def console_main() -> None:
    """`albert-export-checkpoints` (console script) and `python -m
    albert_tf.export_checkpoints`. A config or checkpoint error: one line, exit 1, nothing
    written (`cli.run_script`)."""
    cli.start("export_checkpoints", run, __name__)


if __name__ == "__main__":
    console_main()
