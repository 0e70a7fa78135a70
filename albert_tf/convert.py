r"""Converts an ALBERT checkpoint between formats and prints what was read.

    python -m albert_tf.convert --input=albert-base-v2-hf --output=out/albert_base --to=original
    python -m albert_tf.convert --input=albert_base/model.ckpt-best \
        --albert_config_file=albert_base/albert_config.json --output=out/hf --to=hf

Formats: `original` (the original release's TF1 names, as the released tarballs), `hf`
(a Hugging Face directory: config.json + model.safetensors, loadable with
`transformers.<AlbertFor…>.from_pretrained`), `ours` (our TF2 checkpoint, what every
`--init_checkpoint` reads; `keras` is its deprecated name), `keras_hub` (a keras-hub preset:
`keras_hub.models.AlbertBackbone.from_preset`, and `AlbertTextClassifier.from_preset` for a
classifier). The input may be any of them, or a TF1 Hub module; its heads (pretraining, masked LM,
classifier, multiple choice, SQuAD) are detected from its names and kept. The SentencePiece
model (`--spm_model_file`, else `30k-clean.model` or `spiece.model` beside the input) goes
along to every format; for `hf` with the tokenizer.json and tokenizer_config.json that make
`transformers.pipeline` tokenize as our scripts (one line says when there is none). A
mismatch or an unreadable input is one line on stderr and exit status 1; nothing is written
then.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's log)

import sys

from absl import flags

from albert_tf import cli
from albert_tf.runtime.flag_errors import checkpoint_error

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Checkpoint to read: original TF1 prefix or directory, one "
                    "of ours, a Hugging Face model directory, a TF1 Hub module directory, a "
                    "keras-hub preset directory, or a TF Model Garden TF2 Hub encoder or "
                    "object checkpoint.")
flags.DEFINE_string("output", None, "Directory to write.")
flags.DEFINE_enum("to", None, ["original", "hf", "ours", "keras_hub", "keras"],
                 "Output format: original, hf, ours (albert-tf's), keras_hub (a keras-hub preset); "
                 "\"keras\" is a deprecated name of \"ours\".")
flags.DEFINE_string("albert_config_file", None,
                    "Config of an original/ours input (default: albert_config.json beside it); "
                    "an HF config.json works too.")
flags.DEFINE_enum("head", None, ["encoder", "pretraining", "masked_lm", "classification",
                                 "multiple_choice", "question_answering", "squad_v2"],
                  "The model to convert (default: detected from the input's names; a [1, H] "
                  "classifier reads as classification, i.e. regression).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model to carry along (default: 30k-clean.model or "
                    "spiece.model beside the input).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether the HF tokenizer lower-cases, as the fine-tuning run's flag.")
flags.DEFINE_string("task_name", None,
                    "GLUE task of a classifier: its labels become the HF config's id2label "
                    "(default: an HF input's, else LABEL_0, LABEL_1, ...).")
flags.mark_flags_as_required(["input", "output", "to"])


def run() -> None:
    """The flags → `checkpoints.conversion.convert_checkpoint` (TensorFlow only now)."""
    from albert_tf.checkpoints import CheckpointMismatchError
    from albert_tf.checkpoints.conversion import convert_checkpoint
    from albert_tf.glue.examples import get_task

    labels = get_task(FLAGS.task_name).labels if FLAGS.task_name else None
    if FLAGS.to == "keras":  # read as keras-hub's format by anyone who has used it
        print("--to=keras is deprecated: it writes our format, now --to=ours (keras-hub's "
              "format is --to=keras_hub)", file=sys.stderr)
    try:
        result = convert_checkpoint(FLAGS.input, FLAGS.output, FLAGS.to,
                                    FLAGS.albert_config_file, FLAGS.head, FLAGS.spm_model_file,
                                    label_names=list(labels) if labels else None,
                                    do_lower_case=FLAGS.do_lower_case)
    except (CheckpointMismatchError, FileNotFoundError) as e:  # the input's fault: name the flag
        raise checkpoint_error("input", FLAGS.input, e) from None
    print(f"{result.source_kind} ({result.head}) → {result.target}: {result.output}")
    print(result.report.summary())
    print(f"wrote {result.written} tensors")
    if result.spm_model:  # none: the conversion's warning says so
        print(f"tokenizer: {result.spm_model}")


def console_main() -> None:
    """`albert-convert` (console script) and `python -m albert_tf.convert`. A mismatch, an
    unreadable input or a full disk: one line, exit 1, nothing written."""
    cli.start("convert", run, __name__)


if __name__ == "__main__":
    console_main()
