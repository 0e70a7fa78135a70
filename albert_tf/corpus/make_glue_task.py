"""`python -m albert_tf.corpus.make_glue_task --output_dir=DIR`: writes the learnable
MRPC-format task of `albert_tf.corpus.glue_task` (built from the built-in corpus by default).
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import app, flags

from albert_tf import cli
from albert_tf.corpus.glue_task import KINDS, build_corpus_task

flags.DEFINE_string("output_dir", None, "GLUE data_dir to write (MRPC/ inside).")
flags.DEFINE_string("corpus", None, "Corpus file (default: the built-in corpus).")
flags.DEFINE_integer("num_train", 8000, "Training pairs.", lower_bound=2)
flags.DEFINE_integer("num_dev", 400, "Dev pairs.", lower_bound=2)
flags.DEFINE_integer("num_test", 400, "Test pairs.", lower_bound=2)
flags.DEFINE_integer("seed", 12345, "Random seed.")
flags.DEFINE_enum("kind", "paraphrase", list(KINDS), "Which task (see albert_tf.corpus.glue_task.make_pairs).")
flags.DEFINE_integer("max_documents", None, "Use only the first N documents of the built-in corpus.")


def run() -> None:
    """The flags → the library call (bad input: one line, exit 1, via `cli.start`)."""
    FLAGS = flags.FLAGS
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required")
    build_corpus_task(FLAGS.output_dir, FLAGS.corpus, FLAGS.num_train, FLAGS.num_dev,
                      FLAGS.num_test, FLAGS.seed, FLAGS.max_documents, FLAGS.kind)



def console_main() -> None:
    """`albert-make-glue-task` (console script) and `python -m albert_tf.corpus.make_glue_task`."""
    cli.start("albert_tf.corpus.make_glue_task", run, __name__)


if __name__ == "__main__":
    console_main()
