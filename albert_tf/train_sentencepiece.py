"""Trains a SentencePiece model with the original's options (faithfulness §7.4).

    python -m albert_tf.train_sentencepiece --input=corpus.txt --model_prefix=30k-clean \
        --vocab_size=30000

Writes <model_prefix>.model and <model_prefix>.vocab and prints the special-token ids
(<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4 with the original's options). Lower-casing is
not part of the model: as in the original, `preprocess_text` lower-cases before encoding, so
the training text is lower-cased here too unless --nodo_lower_case.
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
from albert_tf.data.sentencepiece import ORIGINAL_OPTIONS, special_ids, train_sentencepiece

def _define_flags() -> None:
    from absl import flags

    flags.DEFINE_string("input", None, "Comma-separated raw text files, one sentence per line.")
    flags.DEFINE_string("model_prefix", None, "Output prefix: writes <prefix>.model and <prefix>.vocab.")
    flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text as preprocess_text does before encoding.")
    flags.DEFINE_integer("input_sentence_size", ORIGINAL_OPTIONS["input_sentence_size"],
                         "Sentences sampled for training (original: 10M).")
    flags.DEFINE_float("character_coverage", ORIGINAL_OPTIONS["character_coverage"], "Character coverage.")
    flags.DEFINE_integer("num_threads", os.cpu_count() or 1, "Trainer threads.")
    flags.mark_flags_as_required(["input", "model_prefix"])


def run() -> None:
    """The flags → `data.sentencepiece.train_sentencepiece`; prints the special-token ids."""
    from absl import flags, logging

    FLAGS = flags.FLAGS
    model = train_sentencepiece(
        FLAGS.input, FLAGS.model_prefix, FLAGS.vocab_size, FLAGS.do_lower_case,
        input_sentence_size=FLAGS.input_sentence_size,
        character_coverage=FLAGS.character_coverage, num_threads=FLAGS.num_threads)
    logging.info("wrote %s and %s", model, FLAGS.model_prefix + ".vocab")
    ids = special_ids(model)
    print("special token ids: " + ", ".join(f"{k} {v}" for k, v in ids.items()))


def console_main() -> None:
    """`albert-train-sentencepiece` (console script) and `python -m
    albert_tf.train_sentencepiece`: its flags are defined only here, so importing the module
    defines none. A missing input, options spm_train refuses, an unwritable output: one line,
    exit 1."""
    from albert_tf import cli
    from albert_tf.training import flags as training_flags

    _define_flags()
    training_flags.register_float_validators(
        {"character_coverage": training_flags.FloatRange(low=0.0, high=1.0, low_open=True)})
    cli.start("train_sentencepiece", run, __name__, (OSError,))


if __name__ == "__main__":
    console_main()
