"""Trains a SentencePiece model with the original's options (faithfulness §7.4).

    python -m albert_tf.train_sentencepiece --input=corpus.txt --model_prefix=30k-clean \
        --vocab_size=30000

Writes <model_prefix>.model and <model_prefix>.vocab and prints the special-token ids
(<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4 with the original's options). Lower-casing is
not part of the model: as in the original, `preprocess_text` lower-cases before encoding, so
the training text is lower-cased here too unless --nodo_lower_case.
"""

from __future__ import annotations

import albert_tf.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

import os
import sys
import tempfile
from typing import Any

USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")  # ( ) " - . – £ €


def csv_list(items: tuple[str, ...]) -> str:
    """spm_train splits list options as CSV: quote fields holding a quote or a comma."""
    return ",".join(f'"{s.replace(chr(34), chr(34) * 2)}"' if any(c in s for c in '",') else s for s in items)


# The original's spm_train options (§7.4); input, model_prefix and vocab_size come from the caller.
ORIGINAL_OPTIONS: dict[str, Any] = {
    "pad_id": 0,
    "unk_id": 1,
    "eos_id": -1,
    "bos_id": -1,
    "control_symbols": "[CLS],[SEP],[MASK]",
    "user_defined_symbols": csv_list(USER_DEFINED_SYMBOLS),
    "shuffle_input_sentence": True,
    "input_sentence_size": 10_000_000,
    "character_coverage": 0.99995,
    "model_type": "unigram",
}


def train_sentencepiece(input_files: str | list[str], model_prefix: str, vocab_size: int = 30000,
                        do_lower_case: bool = True, **overrides: Any) -> str:
    """Trains a model with the original's options; returns the path of the `.model` file.

    Args:
      input_files: raw text file(s), one sentence per line.
      model_prefix: output path prefix.
      vocab_size: pieces in the model.
      do_lower_case: pass the text through `preprocess_text(lower=True)` first, matching what
        the tokenizer sees at encoding time.
      **overrides: further spm_train options (e.g. seed_sentencepiece_size, num_threads).
    """
    import sentencepiece as spm  # pylint: disable=import-outside-toplevel

    from albert_tf.tokenization import preprocess_text  # pylint: disable=import-outside-toplevel

    files = [input_files] if isinstance(input_files, str) else list(input_files)
    files = [f.strip() for name in files for f in name.split(",") if f.strip()]
    for name in files:
        if not os.path.isfile(name):
            raise FileNotFoundError(f"--input: {name}: file not found")
    directory = os.path.dirname(os.path.abspath(model_prefix))
    os.makedirs(directory, exist_ok=True)
    options = dict(ORIGINAL_OPTIONS, **overrides)
    with tempfile.TemporaryDirectory() as tmp:
        text_file = os.path.join(tmp, "input.txt")
        with open(text_file, "w", encoding="utf-8") as out:
            for name in files:
                with open(name, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        line = preprocess_text(line, lower=do_lower_case)
                        if line:
                            out.write(line + "\n")
        spm.SentencePieceTrainer.train(input=text_file, model_prefix=model_prefix,
                                       vocab_size=vocab_size, minloglevel=2, **options)
    return model_prefix + ".model"


def special_ids(model_file: str) -> dict[str, int]:
    """Ids of <pad>, <unk>, [CLS], [SEP], [MASK] in a trained model."""
    import sentencepiece as spm  # pylint: disable=import-outside-toplevel

    sp = spm.SentencePieceProcessor(model_file=model_file)
    return {piece: sp.piece_to_id(piece) for piece in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")}


def _define_flags() -> None:
    from absl import flags  # pylint: disable=import-outside-toplevel

    flags.DEFINE_string("input", None, "Comma-separated raw text files, one sentence per line.")
    flags.DEFINE_string("model_prefix", None, "Output prefix: writes <prefix>.model and <prefix>.vocab.")
    flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text as preprocess_text does before encoding.")
    flags.DEFINE_integer("input_sentence_size", ORIGINAL_OPTIONS["input_sentence_size"],
                         "Sentences sampled for training (original: 10M).")
    flags.DEFINE_float("character_coverage", ORIGINAL_OPTIONS["character_coverage"], "Character coverage.")
    flags.DEFINE_integer("num_threads", os.cpu_count() or 1, "Trainer threads.")
    flags.mark_flags_as_required(["input", "model_prefix"])


def main(argv: list[str]) -> int:
    from absl import flags, logging  # pylint: disable=import-outside-toplevel

    del argv
    FLAGS = flags.FLAGS
    try:
        model = train_sentencepiece(
            FLAGS.input, FLAGS.model_prefix, FLAGS.vocab_size, FLAGS.do_lower_case,
            input_sentence_size=FLAGS.input_sentence_size,
            character_coverage=FLAGS.character_coverage, num_threads=FLAGS.num_threads)
    except (FileNotFoundError, RuntimeError, OSError) as e:
        message = str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)
        print(f"train_sentencepiece: error: {message}", file=sys.stderr)
        return 1
    logging.info("wrote %s and %s", model, FLAGS.model_prefix + ".vocab")
    ids = special_ids(model)
    print("special token ids: " + ", ".join(f"{k} {v}" for k, v in ids.items()))
    return 0


if __name__ == "__main__":
    from absl import app

    from albert_tf import cli
    from albert_tf.training import flags as training_flags

    _define_flags()
    training_flags.register_float_validators(
        {"character_coverage": training_flags.FloatRange(low=0.0, high=1.0, low_open=True)})
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=cli.flags_parser("train_sentencepiece"))
