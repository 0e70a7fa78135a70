"""Builds the built-in corpus: `python -m albert_tf.corpus.build --output=corpus.txt`.

Optionally also trains a small SentencePiece model on it (--spm_model_prefix).
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags, logging

from albert_tf import cli
from albert_tf.corpus import build_corpus, train_tiny_spm

flags.DEFINE_string("output", None, "Output text file (one sentence per line, blank line between documents).")
flags.DEFINE_integer("max_documents", None, "Keep only the first N documents.")
flags.DEFINE_string("spm_model_prefix", None, "If set, also train a SentencePiece model here.")
flags.DEFINE_integer("vocab_size", 1000, "Pieces of the optional SentencePiece model.")
flags.mark_flag_as_required("output")
FLAGS = flags.FLAGS


def run() -> None:
    """The flags → the library call (bad input: one line, exit 1, via `cli.start`)."""
    stats = build_corpus(FLAGS.output, FLAGS.max_documents)
    logging.info("wrote %s: %d documents, %d sentences, %d words",
                 stats.path, stats.documents, stats.sentences, stats.words)
    if FLAGS.spm_model_prefix:
        model = train_tiny_spm(FLAGS.output, FLAGS.spm_model_prefix, FLAGS.vocab_size)
        logging.info("wrote %s", model)



def console_main() -> None:
    """`albert-build-corpus` (console script) and `python -m albert_tf.corpus.build`."""
    cli.start("albert_tf.corpus.build", run, __name__)


if __name__ == "__main__":
    console_main()
