"""Tokenization (faithfulness §7): golden cases, agreement with sentencepiece, the quirks Q2–Q5, Q21, Q33."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from albert_tf import tokenization as T
from albert_tf.data.sentencepiece import special_ids, train_sentencepiece
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

NORMAL, UNKNOWN, CONTROL = 1, 2, 3


def handmade_spm(path, pieces: list[tuple[str, float, int]]) -> str:
    """A unigram model with exactly these (piece, score, type) entries and no normalisation
    beyond the dummy prefix and whitespace handling, so segmentations can be worked out by hand."""
    model = model_pb2.ModelProto()
    for piece, score, kind in pieces:
        entry = model.pieces.add()
        entry.piece, entry.score, entry.type = piece, score, kind
    names = [p for p, _, _ in pieces]
    spec = model.trainer_spec
    spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    spec.vocab_size = len(pieces)
    spec.unk_id, spec.pad_id, spec.bos_id, spec.eos_id = names.index("<unk>"), names.index("<pad>"), -1, -1
    norm = model.normalizer_spec
    norm.name, norm.add_dummy_prefix, norm.remove_extra_whitespaces, norm.escape_whitespaces = (
        "identity", True, True, True)
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.fixture(scope="module")
def comma_model(tmp_path_factory) -> str:
    """Special pieces in a non-standard order, and pieces that end in "<digit>,"."""
    u = "\u2581"
    chars = [(c, -10.0, NORMAL) for c in "wasl9810,"]
    pieces = [("<unk>", 0, UNKNOWN), ("<pad>", 0, CONTROL), ("[SEP]", 0, CONTROL), ("[CLS]", 0, CONTROL),
              ("[MASK]", 0, CONTROL), (u + "was", -1.0, NORMAL), (u + "199", -1.0, NORMAL), ("8,", -1.0, NORMAL),
              (u + "1,", -1.0, NORMAL), ("000,", -1.0, NORMAL), ("000", -1.5, NORMAL), (u, -5.0, NORMAL)] + chars
    return handmade_spm(tmp_path_factory.mktemp("spm") / "comma.model", pieces)


# ----- preprocess_text (§7.1) -----
@pytest.mark.parametrize("text, lower, expected", [
    ("Café naïve résumé", False, "Cafe naive resume"),  # NFKD + combining marks dropped, always (Q4)
    ("Café NAÏVE", True, "cafe naive"),
    ("  a \t b\n\n c  ", False, "a b c"),
    ("", True, ""),
    (" \t\n\u3000 ", True, ""),  # whitespace only (U+3000 ideographic space is whitespace)
    ("ﬁne ①", False, "fine 1"),  # compatibility decomposition
    ("日本語", True, "日本語"),  # CJK ideographs have no decomposition
    ("が", False, "か"),  # kana voicing mark is a combining character: stripped (Q4)
    ("a\x07b", False, "a\x07b"),  # control characters are not removed here
    ("a\x1cb", False, "a b"),  # ... but str.split() counts \x1c as whitespace
    ("1,000,000 in 1998,", True, "1,000,000 in 1998,"),
    ("``quoted''", False, "``quoted''"),  # no quote rewriting in this release
])
def test_preprocess_text_golden(text, lower, expected):
    assert T.preprocess_text(text, lower=lower) == expected


def test_preprocess_text_bytes_give_str():
    out = T.preprocess_text("Ünïcode".encode("utf-8"), lower=True)
    assert out == "unicode" and isinstance(out, str)


# ----- encode_pieces digit-comma rule (§7.3, Q2) -----
def test_digit_comma_spec_example(comma_model):
    sp = spm.SentencePieceProcessor(model_file=comma_model)
    u = "\u2581"
    assert sp.encode("was 1998,", out_type=str) == [u + "was", u + "199", "8,"]
    # The spec's example: Python 3 keeps the re-encoding's leading ▁ (default), Python 2 drops it.
    assert T.encode_pieces(sp, "was 1998,") == [u + "was", u + "199", u, "8", ","]
    assert T.encode_pieces(sp, "was 1998,", comma_rule="python2") == [u + "was", u + "199", "8", ","]


def test_digit_comma_million(comma_model):
    sp = spm.SentencePieceProcessor(model_file=comma_model)
    u = "\u2581"
    assert sp.encode("1,000,000", out_type=str) == [u + "1,", "000,", "000"]
    # "▁1," starts with ▁, so both rules agree on it; "000," differs.
    assert T.encode_pieces(sp, "1,000,000") == [u, "1", ",", u, "000", ",", "000"]
    assert T.encode_pieces(sp, "1,000,000", comma_rule="python2") == [u, "1", ",", "000", ",", "000"]
    tok = T.FullTokenizer(spm_model_file=comma_model)
    assert tok.tokenize("1,000,000") == T.encode_pieces(sp, "1,000,000")
    assert tok.tokenize_batch(["1,000,000", "was 1998,"]) == [tok.tokenize("1,000,000"), tok.tokenize("was 1998,")]


def test_bad_comma_rule(comma_model):
    with pytest.raises(ValueError, match="comma_rule"):
        T.FullTokenizer(spm_model_file=comma_model, comma_rule="python4")


def test_special_ids_read_from_model(comma_model):
    tok = T.FullTokenizer(spm_model_file=comma_model)
    assert (tok.cls_id, tok.sep_id, tok.mask_id, tok.unk_id, tok.pad_id) == (3, 2, 4, 0, 1)
    assert tok.special_ids() == {"[CLS]": 3, "[SEP]": 2, "[MASK]": 4, "<pad>": 1, "<unk>": 0}


# ----- SentencePiece mode on the trained tiny model -----
def test_agrees_with_sentencepiece_on_plain_text(text_assets):  # noqa: F811
    sp = spm.SentencePieceProcessor(model_file=text_assets.spm_model)
    tok = T.FullTokenizer(spm_model_file=text_assets.spm_model)
    with open(text_assets.corpus, encoding="utf-8") as f:
        lines = [T.preprocess_text(text, lower=True) for text in f.read().splitlines()[:3000:7]
                 if text.strip()]
    plain = [line for line in lines if not any(c.isdigit() for c in line)]
    assert len(plain) > 200
    for line in plain:
        assert tok.tokenize(line) == sp.encode(line, out_type=str)
        assert tok.convert_tokens_to_ids(tok.tokenize(line)) == sp.encode(line)
    assert tok.tokenize_batch(lines) == [tok.tokenize(line) for line in lines]


def test_trained_model_special_ids(text_assets):  # noqa: F811
    tok = T.FullTokenizer(vocab_file="ignored-when-spm-given.txt", spm_model_file=text_assets.spm_model)
    # §7.4: pad, unk, control symbols, then the user-defined symbols in order.
    expected = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"]
    assert tok.convert_ids_to_tokens(range(13)) == expected
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.vocab_size == 1000
    # Control symbols are never produced from raw text.
    assert "[MASK]" not in tok.tokenize("a [MASK] b")


def test_sentencepiece_mode_ignores_do_lower_case(text_assets):  # noqa: F811
    """Q3: tokenize does not lower-case; preprocess_text does."""
    tok = T.FullTokenizer(spm_model_file=text_assets.spm_model, do_lower_case=True)
    pieces = tok.tokenize("HELLO")
    assert any(c.isupper() for c in "".join(pieces))
    assert not any(c.isupper() for c in "".join(tok.tokenize(T.preprocess_text("HELLO", lower=True))))


def test_pieces_are_text_for_bytes_input(text_assets):  # noqa: F811
    """Q33: always str."""
    tok = T.FullTokenizer(spm_model_file=text_assets.spm_model)
    pieces = tok.tokenize("the module".encode("utf-8"))
    assert pieces == tok.tokenize("the module") and all(isinstance(p, str) for p in pieces)


def test_unknown_piece_maps_to_unk(text_assets):  # noqa: F811
    tok = T.FullTokenizer(spm_model_file=text_assets.spm_model)
    assert tok.convert_tokens_to_ids(["\u2581definitely-not-a-piece"]) == [1]


def test_empty_and_whitespace_sentencepiece(text_assets):  # noqa: F811
    tok = T.FullTokenizer(spm_model_file=text_assets.spm_model)
    assert tok.tokenize(T.preprocess_text("")) == []
    assert tok.tokenize(T.preprocess_text(" \t \n")) == []


# ----- word-start rule (§5.7, Q5) -----
@pytest.mark.parametrize("piece, expected", [
    ("\u2581the", True), ("<unk>", True), (",", True), ("(", True), ("ing", False), ("ING", False),
    ("'s", True), ("9", True), ("x9", True), ("é", True), ("..", False), ("=", True), ("'", True),
    ("\u20ac", True), ("ab", False), ("a-b", False),
])
def test_sentencepiece_word_start_rule(piece, expected):
    assert T.is_start_piece_spm(piece) is expected


# ----- WordPiece mode (§7.2) -----
WORDPIECE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa", "un", "runn",
                   "##ing", ",", "low", "##er", "##est", "博", "推", "hallo", "ab", "c", "1", "000", "HäLLo"]


@pytest.fixture(scope="module")
def wordpiece_vocab(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("wp") / "vocab.txt"
    path.write_text("\n".join(WORDPIECE_VOCAB) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("text, lower, expected", [
    ("UNwant\u00e9d,running", True, ["un", "##want", "##ed", ",", "runn", "##ing"]),
    ("ah博推zz", True, ["[UNK]", "博", "推", "[UNK]"]),  # CJK ideographs become single tokens
    ("\x00ab\x07\ufffd c", True, ["ab", "c"]),  # NUL, control and U+FFFD dropped
    ("HäLLo", True, ["hallo"]),
    ("HäLLo", False, ["HäLLo"]),
    ("1,000,000", True, ["1", ",", "000", ",", "000"]),
    ("lowest lower", True, ["low", "##est", "low", "##er"]),
    ("", True, []),
    (" \t\n ", True, []),
    ("a" * 201, True, ["[UNK]"]),
])
def test_wordpiece_golden(wordpiece_vocab, text, lower, expected):
    tok = T.FullTokenizer(vocab_file=wordpiece_vocab, do_lower_case=lower)
    assert tok.tokenize(text) == expected


def test_wordpiece_ids(wordpiece_vocab):
    tok = T.FullTokenizer(vocab_file=wordpiece_vocab)
    assert tok.convert_tokens_to_ids(["un", "##want", "nope"]) == [9, 6, 1]
    assert tok.convert_ids_to_tokens([2, 3, 4]) == ["[CLS]", "[SEP]", "[MASK]"]
    assert (tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id, tok.unk_id) == (2, 3, 4, 0, 1)
    assert not tok.uses_sentencepiece and tok.is_start_piece("##ed") is False


# ----- wrong files (Q21) -----
def test_sentencepiece_model_as_vocab_file_is_an_error(text_assets):  # noqa: F811
    with pytest.raises(T.TokenizerError, match="is a SentencePiece model.*spm_model_file"):
        T.FullTokenizer(vocab_file=text_assets.spm_model)


def test_sentencepiece_vocab_listing_as_vocab_file_is_an_error(text_assets):  # noqa: F811
    listing = text_assets.spm_model[:-len(".model")] + ".vocab"
    with pytest.raises(T.TokenizerError, match="SentencePiece .vocab"):
        T.FullTokenizer(vocab_file=listing)


def test_missing_files(tmp_path):
    with pytest.raises(T.TokenizerError, match="spm_model_file .*not found"):
        T.FullTokenizer(spm_model_file=str(tmp_path / "missing.model"))
    with pytest.raises(T.TokenizerError, match="vocab_file .*not found"):
        T.FullTokenizer(vocab_file=str(tmp_path / "missing.txt"))
    with pytest.raises(T.TokenizerError, match="needs spm_model_file"):
        T.FullTokenizer()


def test_text_file_as_spm_model_is_an_error(wordpiece_vocab):
    with pytest.raises(T.TokenizerError, match="not a SentencePiece model"):
        T.FullTokenizer(spm_model_file=wordpiece_vocab)


# ----- train_sentencepiece (§7.4) -----
def test_train_sentencepiece_cli(tmp_path, text_assets):  # noqa: F811
    text = tmp_path / "text.txt"
    with open(text_assets.corpus, encoding="utf-8") as f:
        text.write_text("".join(f.readlines()[:2000]), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.train_sentencepiece", f"--input={text}",
         f"--model_prefix={tmp_path / 'm'}", "--vocab_size=200"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4" in result.stdout
    assert special_ids(str(tmp_path / "m.model")) == {"<pad>": 0, "<unk>": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}


def test_train_sentencepiece_vocab_too_large_is_one_line(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("a b c\n" * 50)
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.train_sentencepiece", f"--input={text}",
         f"--model_prefix={tmp_path / 'm'}", "--vocab_size=500"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "Vocabulary size too high" in errors[0]
    assert errors[0].startswith("train_sentencepiece: error: ")
    assert "Traceback" not in result.stderr


def test_train_sentencepiece_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="--input"):
        train_sentencepiece(str(tmp_path / "nope.txt"), str(tmp_path / "m"), 50)
