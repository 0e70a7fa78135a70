"""Trains a SentencePiece model with the original's options (faithfulness §7.4).

`train_sentencepiece` writes <model_prefix>.model and <model_prefix>.vocab (the command line is
`python -m albert_tf.train_sentencepiece`); `special_ids` reads back <pad> 0, <unk> 1, [CLS] 2,
[SEP] 3, [MASK] 4 with the original's options. Lower-casing is not part of the model: as in
the original, `preprocess_text` lower-cases before encoding, so the training text is
lower-cased here too unless `do_lower_case=False`.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from albert_tf.runtime import paths
from albert_tf.runtime.atomic_files import atomic_file

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


class SentencePieceError(ValueError):
    """spm_train refused its input or options (its last message line)."""


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
    import sentencepiece as spm

    from albert_tf.tokenization import preprocess_text

    files = [input_files] if isinstance(input_files, str) else list(input_files)
    files = [f.strip() for name in files for f in name.split(",") if f.strip()]
    for name in files:
        if not paths.isfile(name):
            raise FileNotFoundError(f"--input: {name}: file not found")
    options = dict(ORIGINAL_OPTIONS, **overrides)
    # spm_train reads and writes local files only: the input is gathered into a local
    # temporary file; for a remote model_prefix the model is trained in the temporary
    # directory and published there through atomic_file, .model and .vocab each complete
    # or absent (a local model_prefix is written by spm_train itself, as before).
    if paths.is_local(model_prefix):
        os.makedirs(os.path.dirname(os.path.abspath(model_prefix)), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        text_file = os.path.join(tmp, "input.txt")
        with open(text_file, "w", encoding="utf-8") as out:
            for name in files:
                with paths.open_file(name, "rb") as f:
                    for raw in f:
                        line = raw.decode("utf-8", errors="replace")
                        line = preprocess_text(line, lower=do_lower_case)
                        if line:
                            out.write(line + "\n")
        try:
            trained = model_prefix if paths.is_local(model_prefix) else os.path.join(tmp, "spm")
            spm.SentencePieceTrainer.train(input=text_file, model_prefix=trained,
                                           vocab_size=vocab_size, minloglevel=2, **options)
        except RuntimeError as e:  # spm_train's own checks (vocab_size too large, ...)
            message = str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)
            raise SentencePieceError(message) from None
        for suffix in (".model", ".vocab") if trained != model_prefix else ():
            with open(trained + suffix, "rb") as f, \
                    atomic_file(model_prefix + suffix, "wb", what="SentencePiece model") as out:
                out.write(f.read())
    return model_prefix + ".model"


def special_ids(model_file: str) -> dict[str, int]:
    """Ids of <pad>, <unk>, [CLS], [SEP], [MASK] in a trained model."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=paths.read_bytes(model_file))
    return {piece: sp.piece_to_id(piece) for piece in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")}
