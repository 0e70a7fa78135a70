"""`python -m albert_tf.corpus.make_race_task --output_dir=DIR`: writes the learnable
RACE-format task of `albert_tf.corpus.race_task` (from the built-in corpus by default).
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.corpus.race_task import KINDS, build_race_corpus_task

flags.DEFINE_string("output_dir", None, "RACE data_dir to write (RACE/ inside).")
flags.DEFINE_string("corpus", None, "Corpus file (default: the built-in corpus).")
flags.DEFINE_enum("kind", "phrase", list(KINDS),
                  "phrase: which phrase appears in the text (learnable from scratch); "
                  "next_sentence: which sentence follows / precedes it (needs pretraining).")
flags.DEFINE_integer("num_train", 4000, "Training articles.", lower_bound=1)
flags.DEFINE_integer("num_dev", 200, "Dev articles.", lower_bound=1)
flags.DEFINE_integer("num_test", 200, "Test articles.", lower_bound=1)
flags.DEFINE_integer("seed", 12345, "Random seed.")
flags.DEFINE_integer("max_documents", None, "Use only the first N documents of the built-in corpus.")
flags.DEFINE_integer("middle_sentences", 1, "Sentences per middle-level article.", lower_bound=1)
flags.DEFINE_integer("high_sentences", 2, "Sentences per high-level article.", lower_bound=1)
flags.DEFINE_integer("max_article_words", 28,
                     "Longest article in words (fits a 64-token sequence); 0: no limit.",
                     lower_bound=0)
flags.mark_flag_as_required("output_dir")


def run() -> None:
    """The flags → the library call (bad input: one line, exit 1, via `cli.start`)."""
    f = flags.FLAGS
    counts = build_race_corpus_task(
        f.output_dir, f.corpus, f.num_train, f.num_dev, f.num_test, f.seed, f.max_documents,
        f.kind, f.middle_sentences, f.high_sentences,
        max_article_words=f.max_article_words or None)
    print(f"Wrote {f.output_dir}/RACE ({f.kind}): "
          + ", ".join(f"{split} {c['articles']} articles / {c['questions']} questions"
                      for split, c in counts.items()))



def console_main() -> None:
    """`albert-make-race-task` (console script) and `python -m albert_tf.corpus.make_race_task`."""
    cli.start("albert_tf.corpus.make_race_task", run, __name__)


if __name__ == "__main__":
    console_main()
