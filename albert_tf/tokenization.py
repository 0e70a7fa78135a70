"""ALBERT tokenization: SentencePiece (English models) or WordPiece (Chinese models) (faithfulness §7).

* `preprocess_text` — whitespace collapsing, NFKD accent stripping (always, Q4), optional
  lower-casing; no quote rewriting in this release (§7.1).
* `encode_pieces` — SentencePiece pieces with the "digit + comma" re-encoding (§7.3). The
  original's Python 3 behaviour (Q2: the leading-▁ removal never fires) is the default;
  `comma_rule="python2"` gives the intended behaviour.
* `FullTokenizer` — picks the mode from its arguments. In SentencePiece mode `tokenize` does
  *not* lower-case or strip accents (Q3): callers run `preprocess_text` first, as the original
  scripts do. Pieces are always `str` (Q33).

Example:
    >>> tokenizer = FullTokenizer(spm_model_file="30k-clean.model")
    >>> pieces = tokenizer.tokenize(preprocess_text("Hello, World!", lower=True))
    >>> ids = tokenizer.convert_tokens_to_ids(pieces)
"""

from __future__ import annotations

import unicodedata
from typing import Iterable, Sequence

import sentencepiece as spm

from albert_tf.runtime import paths

SPIECE_UNDERLINE = "\u2581"
COMMA_RULES = ("python3", "python2")
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")


class TokenizerError(ValueError):
    """A vocabulary or model file is missing or of the wrong kind."""


def convert_to_unicode(text: str | bytes) -> str:
    """Text as str; bytes are decoded as UTF-8 (Q33: never return bytes)."""
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    if isinstance(text, str):
        return text
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def preprocess_text(inputs: str | bytes, remove_space: bool = True, lower: bool = False) -> str:
    """Normalises raw text before SentencePiece (§7.1).

    Args:
      inputs: text (bytes are decoded as UTF-8).
      remove_space: strip and collapse every whitespace run to one space.
      lower: lower-case after accent stripping.
    """
    outputs = convert_to_unicode(inputs)
    if remove_space:
        outputs = " ".join(outputs.strip().split())
    if not outputs.isascii():  # ASCII text is unchanged by NFKD and has no combining marks
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs


def _fix_digit_comma(sp_model: spm.SentencePieceProcessor, pieces: list[str], comma_rule: str) -> list[str]:
    """Splits pieces ending in "<digit>," into the re-encoded number and "," (§7.3 step 2)."""
    new_pieces: list[str] = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur = sp_model.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
            if (comma_rule == "python2" and cur and piece[0] != SPIECE_UNDERLINE
                    and cur[0][0] == SPIECE_UNDERLINE):
                cur = cur[1:] if len(cur[0]) == 1 else [cur[0][1:]] + cur[1:]
            new_pieces.extend(cur)
            new_pieces.append(piece[-1])
        else:
            new_pieces.append(piece)
    return new_pieces


def encode_pieces(sp_model: spm.SentencePieceProcessor, text: str | bytes, sample: bool = False,
                  comma_rule: str = "python3") -> list[str]:
    """SentencePiece pieces of `text` with the original's digit-comma rule (§7.3, Q2).

    Args:
      sp_model: a loaded SentencePieceProcessor.
      text: already preprocessed text.
      sample: subword sampling (nbest 64, alpha 0.1) instead of the best segmentation.
      comma_rule: "python3" (default; what the release produces today: the re-encoded number
        keeps its leading ▁, e.g. "▁199 8," → "▁199 ▁ 8 ,") or "python2" (the intended rule,
        "▁199 8 ,").
    """
    if comma_rule not in COMMA_RULES:
        raise ValueError(f"comma_rule must be one of {COMMA_RULES}, got {comma_rule!r}")
    text = convert_to_unicode(text)
    if sample:
        pieces = sp_model.encode(text, out_type=str, enable_sampling=True, nbest_size=64, alpha=0.1)
    else:
        pieces = sp_model.encode(text, out_type=str)
    return _fix_digit_comma(sp_model, pieces, comma_rule)


def encode_ids(sp_model: spm.SentencePieceProcessor, text: str | bytes, sample: bool = False,
               comma_rule: str = "python3") -> list[int]:
    """Ids of `encode_pieces` (§7.3 step 3)."""
    return [sp_model.piece_to_id(p) for p in encode_pieces(sp_model, text, sample, comma_rule)]


def _read_bytes(path: str, what: str) -> bytes:
    """File contents; cloud paths (gs://…) go through tf.io.gfile like the original."""
    if not paths.isfile(path):
        raise TokenizerError(f"{what} {path}: file not found")
    return paths.read_bytes(path)


def _looks_like_sentencepiece_model(data: bytes) -> bool:
    if b"\x00" not in data[:4096]:
        try:
            data[:4096].decode("utf-8")
            return False
        except UnicodeDecodeError:
            pass
    processor = spm.SentencePieceProcessor()
    try:
        processor.load_from_serialized_proto(data)
    except (RuntimeError, OSError, ValueError):
        return False
    return processor.get_piece_size() > 0


def load_vocab(vocab_file: str) -> dict[str, int]:
    """WordPiece vocab: the first whitespace-separated field of line i has id i (§7.2).

    Raises TokenizerError when the file is a SentencePiece model (Q21) or a SentencePiece
    `.vocab` listing ("piece<TAB>score"), which would silently give wrong ids.
    """
    data = _read_bytes(vocab_file, "vocab_file")
    if _looks_like_sentencepiece_model(data):
        raise TokenizerError(
            f"vocab_file {vocab_file} is a SentencePiece model, not a WordPiece vocab.txt; "
            f"pass it as spm_model_file")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise TokenizerError(f"vocab_file {vocab_file}: line {line} is not valid UTF-8") from None
    if lines and SPIECE_UNDERLINE in "".join(lines[:200]) and all("\t" in entry for entry in lines[:20]):
        raise TokenizerError(
            f"vocab_file {vocab_file} looks like a SentencePiece .vocab listing (piece<TAB>score); "
            f"pass the matching .model file as spm_model_file")
    vocab: dict[str, int] = {}
    for index, line in enumerate(lines):
        fields = line.split()
        token = fields[0] if fields else line.strip()
        vocab.setdefault(token, index)
    return vocab


def is_start_piece_spm(piece: str) -> bool:
    """§5.7 word-start rule for SentencePiece pieces (with the original's quirks, Q5).

    A piece starts a word if it begins with ▁ or "<", is a single listed punctuation mark, or
    contains any character (lower-cased) that is neither a–z nor listed punctuation (digits,
    apostrophes, non-ASCII letters...). The list lacks ' < = >; € and £ never match (Q5).
    """
    if piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<") or piece in _SPECIAL_PUNCT:
        return True
    return any(c not in _WORD_CHARS for c in piece.lower())


_SPECIAL_PUNCT = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz") | _SPECIAL_PUNCT


def is_start_piece_wordpiece(piece: str) -> bool:
    """§5.7: a WordPiece token starts a word unless it begins with "##"."""
    return not piece.startswith("##")


class FullTokenizer:
    """Tokenizer of the original release (§7.2): SentencePiece when `spm_model_file` is given,
    else WordPiece from `vocab_file` (the released Chinese models).

    Args:
      vocab_file: WordPiece vocab.txt; ignored when `spm_model_file` is given (the original's
        scripts require the flag even then).
      do_lower_case: WordPiece mode only; SentencePiece mode ignores it (Q3): use
        `preprocess_text(text, lower=...)` before `tokenize`.
      spm_model_file: a SentencePiece model (`*.model`).
      comma_rule: see `encode_pieces` (faithfulness Q2).

    Example:
        >>> tok = FullTokenizer(spm_model_file="30k-clean.model")
        >>> tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id, tok.unk_id
        (2, 3, 4, 0, 1)
    """

    def __init__(self, vocab_file: str | None = None, do_lower_case: bool = True,
                 spm_model_file: str | None = None, comma_rule: str = "python3"):
        if comma_rule not in COMMA_RULES:
            raise ValueError(f"comma_rule must be one of {COMMA_RULES}, got {comma_rule!r}")
        self.do_lower_case = do_lower_case
        self.comma_rule = comma_rule
        self.sp_model: spm.SentencePieceProcessor | None = None
        if spm_model_file:
            self.sp_model = spm.SentencePieceProcessor()
            data = _read_bytes(spm_model_file, "spm_model_file")
            try:
                self.sp_model.load_from_serialized_proto(data)
            except (RuntimeError, OSError) as e:
                raise TokenizerError(f"spm_model_file {spm_model_file}: not a SentencePiece model ({e})") from None
            self.vocab = {self.sp_model.id_to_piece(i): i for i in range(self.sp_model.get_piece_size())}
            self.unk_token, self.pad_token = "<unk>", "<pad>"
            self.basic_tokenizer = self.wordpiece_tokenizer = None
        elif vocab_file:
            self.vocab = load_vocab(vocab_file)
            self.unk_token, self.pad_token = "[UNK]", "[PAD]"
            self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab, unk_token=self.unk_token)
        else:
            raise TokenizerError("FullTokenizer needs spm_model_file (SentencePiece) or vocab_file (WordPiece)")
        self.inv_vocab = {i: p for p, i in self.vocab.items()}
        missing = [t for t in SPECIAL_TOKENS if t not in self.vocab]
        if missing:
            source = spm_model_file or vocab_file
            raise TokenizerError(f"{source}: vocabulary lacks the special token(s) {', '.join(missing)}")

    # ----- modes and special ids -----
    @property
    def uses_sentencepiece(self) -> bool:
        return self.sp_model is not None

    @property
    def vocab_size(self) -> int:
        return len(self.inv_vocab)

    @property
    def cls_id(self) -> int:
        return self.vocab["[CLS]"]

    @property
    def sep_id(self) -> int:
        return self.vocab["[SEP]"]

    @property
    def mask_id(self) -> int:
        return self.vocab["[MASK]"]

    @property
    def unk_id(self) -> int:
        if self.sp_model is not None:
            return self.sp_model.unk_id()
        return self.vocab.get(self.unk_token, 0)

    @property
    def pad_id(self) -> int:
        if self.sp_model is not None:
            pad = self.sp_model.pad_id()
            return pad if pad >= 0 else 0
        return self.vocab.get(self.pad_token, 0)

    def special_ids(self) -> dict[str, int]:
        """{"[CLS]": …, "[SEP]": …, "[MASK]": …, pad token: …, unk token: …}."""
        return {"[CLS]": self.cls_id, "[SEP]": self.sep_id, "[MASK]": self.mask_id,
                self.pad_token: self.pad_id, self.unk_token: self.unk_id}

    # ----- tokenization -----
    def tokenize(self, text: str | bytes) -> list[str]:
        """Pieces of `text` (SentencePiece: no lower-casing here, Q3)."""
        if self.sp_model is not None:
            return encode_pieces(self.sp_model, text, comma_rule=self.comma_rule)
        return [sub for token in self.basic_tokenizer.tokenize(text)
                for sub in self.wordpiece_tokenizer.tokenize(token)]

    def tokenize_batch(self, texts: Sequence[str]) -> list[list[str]]:
        """`tokenize` of many texts; SentencePiece encodes them in one native call."""
        if self.sp_model is None:
            return [self.tokenize(t) for t in texts]
        batches = self.sp_model.encode(list(texts), out_type=str)
        return [_fix_digit_comma(self.sp_model, pieces, self.comma_rule)
                if "," in text or not text.isascii() else pieces  # NFKC can make other commas ","
                for text, pieces in zip(texts, batches)]

    def is_start_piece(self, piece: str) -> bool:
        """The §5.7 word-start rule of this tokenizer's mode."""
        if self.sp_model is not None:
            return is_start_piece_spm(piece)
        return is_start_piece_wordpiece(piece)

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        if self.sp_model is not None:
            return [self.sp_model.piece_to_id(convert_to_unicode(t)) for t in tokens]
        unk = self.vocab.get(self.unk_token)
        ids = []
        for token in tokens:
            if token in self.vocab:
                ids.append(self.vocab[token])
            elif unk is not None:
                ids.append(unk)
            else:
                raise KeyError(f"token {token!r} is not in the vocabulary (which has no {self.unk_token})")
        return ids

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        if self.sp_model is not None:
            return [self.sp_model.id_to_piece(int(i)) for i in ids]
        return [self.inv_vocab[int(i)] for i in ids]


# ----- WordPiece mode (BERT's pipeline) -----

def whitespace_tokenize(text: str) -> list[str]:
    text = text.strip()
    return text.split() if text else []


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    """ASCII non-alphanumerics count as punctuation (e.g. "$", "^"), plus Unicode P* classes."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp: int) -> bool:
    """CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana)."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class BasicTokenizer:
    """Cleaning, CJK spacing, whitespace and punctuation splitting, optional lower-casing with
    NFD accent stripping (BERT's basic tokenizer, §7.2 WordPiece mode)."""

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text: str | bytes) -> list[str]:
        text = self._clean_text(convert_to_unicode(text))
        text = self._space_chinese_chars(text)
        output = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._strip_accents(token.lower())
            output.extend(self._split_on_punctuation(token))
        return whitespace_tokenize(" ".join(output))

    @staticmethod
    def _clean_text(text: str) -> str:
        out = []
        for char in text:
            if ord(char) in (0, 0xFFFD) or _is_control(char):
                continue
            out.append(" " if _is_whitespace(char) else char)
        return "".join(out)

    @staticmethod
    def _space_chinese_chars(text: str) -> str:
        return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)

    @staticmethod
    def _strip_accents(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _split_on_punctuation(text: str) -> list[str]:
        pieces: list[list[str]] = []
        start_new = True
        for char in text:
            if _is_punctuation(char):
                pieces.append([char])
                start_new = True
            else:
                if start_new:
                    pieces.append([])
                start_new = False
                pieces[-1].append(char)
        return ["".join(p) for p in pieces]


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece with "##" continuations (§7.2)."""

    def __init__(self, vocab: dict[str, int], unk_token: str = "[UNK]", max_input_chars_per_word: int = 200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str) -> list[str]:
        output: list[str] = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            if len(token) > self.max_input_chars_per_word:
                output.append(self.unk_token)
                continue
            sub_tokens, start = [], 0
            while start < len(token):
                end = len(token)
                match = None
                while start < end:
                    candidate = token[start:end] if start == 0 else "##" + token[start:end]
                    if candidate in self.vocab:
                        match = candidate
                        break
                    end -= 1
                if match is None:
                    sub_tokens = [self.unk_token]
                    break
                sub_tokens.append(match)
                start = end
            output.extend(sub_tokens)
        return output
