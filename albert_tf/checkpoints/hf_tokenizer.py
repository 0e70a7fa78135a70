"""The tokenizer files of a Hugging Face directory, so that transformers tokenizes as we do.

`hf_tokenizer_files(spm_model_file, model_max_length)` gives `tokenizer.json` and
`tokenizer_config.json` for an ALBERT SentencePiece model (faithfulness §7.5). What
transformers builds from `spiece.model` alone differs from the original in ways that change
predictions: no `token_type_ids` (every pair reaches the model as segment 0), the model's
user-defined symbols `( ) " - .` split off before the pieces (`"ndbm"` → `" ▁ n …` where the
original has `▁ " n …`), ` `` ` and `''` rewritten as `"` (this release does not, §7.1), and
no `model_max_length`. The tokenizer.json here is the original's pipeline step by step:
`preprocess_text` (whitespace collapsed, NFKD, combining characters dropped, lower-cased),
then the SentencePiece model's own normaliser (its precompiled NFKC map, extra spaces removed,
a ▁ prefix, ▁ for spaces), its unigram pieces and scores, and `[CLS] A [SEP] B [SEP]` with
segment ids 0 and 1. It is written as JSON: neither `tokenizers` nor transformers is needed.

Example:
    >>> files = hf_tokenizer_files("30k-clean.model", model_max_length=512)
    >>> sorted(files.files), files.token_ids
    (['tokenizer.json', 'tokenizer_config.json'], {'pad_token_id': 0, 'bos_token_id': 2, ...})
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import re
import sys
import unicodedata
from typing import Any, Callable

from absl import logging

from albert_tf.checkpoints.hf_files import TOKENIZER_CONFIG_FILE, TOKENIZER_FILE
from albert_tf.tokenization import SPIECE_UNDERLINE, FullTokenizer, TokenizerError

# AlbertTokenizer's default lacks token_type_ids: pairs would all be segment 0.
MODEL_INPUT_NAMES = ["input_ids", "token_type_ids", "attention_mask"]
# The transformers class that uses tokenizer.json as written (AlbertTokenizer rebuilds the
# normaliser and pre-tokeniser its own way, rewriting `` and '' as ").
TOKENIZER_CLASS = "PreTrainedTokenizerFast"
_UNIGRAM = 1  # TrainerSpec.model_type
_NORMAL, _USER_DEFINED = 1, 4  # ModelProto.SentencePiece.type
_EDGE_SPACE = r"\A | \z"  # one space at either end (after runs were collapsed)


@dataclasses.dataclass(frozen=True)
class HFTokenizerFiles:
    """What an HF directory needs for its tokenizer: file name → text, config.json's ids."""

    files: dict[str, str]
    token_ids: dict[str, int]


@functools.cache
def _char_class(predicate: Callable[[str], bool]) -> str:
    """An Oniguruma character class of every code point `predicate` accepts (ranges)."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if not 0xD800 <= code <= 0xDFFF and predicate(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "[" + "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b > a else "")
                         for a, b in ranges) + "]"


def _is_combining(char: str) -> bool:
    return unicodedata.combining(char) != 0


def _replace(pattern: str, content: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}


def _normalizer(proto: Any, do_lower_case: bool) -> dict[str, Any]:
    """`preprocess_text(remove_space=True, lower=do_lower_case)` (§7.1), then the model's own
    normaliser: the same characters as Python's `str.split`/`unicodedata.combining` see them."""
    steps = [_replace(_char_class(str.isspace) + "+", " "), _replace(_EDGE_SPACE, ""),
             {"type": "NFKD"}, _replace(_char_class(_is_combining), "")]
    if do_lower_case:
        steps.append({"type": "Lowercase"})
    spec = proto.normalizer_spec
    if spec.precompiled_charsmap:
        steps.append({"type": "Precompiled",
                      "precompiled_charsmap": base64.b64encode(spec.precompiled_charsmap).decode()})
    if spec.remove_extra_whitespaces:
        steps += [_replace(" {2,}", " "), _replace(_EDGE_SPACE, "")]
    return {"type": "Sequence", "normalizers": steps}


def _special_token(token: str, token_id: int) -> dict[str, Any]:
    return {"id": token_id, "content": token, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}


def _template(cls: str, sep: str, pair: bool) -> list[dict[str, Any]]:
    """`[CLS] A [SEP]` (+ `B [SEP]` with segment id 1), as the original packs features."""
    items = [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": sep, "type_id": 0}}]
    if pair:
        items += [{"Sequence": {"id": "B", "type_id": 1}},
                  {"SpecialToken": {"id": sep, "type_id": 1}}]
    return items


def _tokenizer_json(proto: Any, special: dict[str, int], unk_id: int,
                    do_lower_case: bool) -> dict[str, Any]:
    # A piece never spans a ▁ but at its start (split_by_whitespace): splitting at ▁ first gives
    # the same pieces, and transformers its word ids.
    split = not any(SPIECE_UNDERLINE in p.piece[1:] for p in proto.pieces
                    if p.type in (_NORMAL, _USER_DEFINED))
    prepend = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    metaspace = {"replacement": SPIECE_UNDERLINE, "prepend_scheme": prepend, "split": split}
    cls, sep = "[CLS]", "[SEP]"
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_special_token(t, i) for t, i in sorted(special.items(),
                                                                 key=lambda item: item[1])],
        "normalizer": _normalizer(proto, do_lower_case),
        "pre_tokenizer": {"type": "Metaspace", **metaspace},
        "post_processor": {
            "type": "TemplateProcessing", "single": _template(cls, sep, False),
            "pair": _template(cls, sep, True),
            "special_tokens": {t: {"id": t, "ids": [special[t]], "tokens": [t]} for t in (cls, sep)}},
        "decoder": {"type": "Metaspace", **metaspace},
        "model": {"type": "Unigram", "unk_id": unk_id,
                  "vocab": [[p.piece, float(p.score)] for p in proto.pieces],
                  "byte_fallback": bool(proto.trainer_spec.byte_fallback)},
    }


def _unsupported(proto: Any) -> list[str]:
    """SentencePiece options a transformers tokenizer.json cannot reproduce."""
    out = []
    if proto.trainer_spec.model_type != _UNIGRAM:
        out.append("a model_type other than unigram")
    if proto.trainer_spec.treat_whitespace_as_suffix:
        out.append("treat_whitespace_as_suffix")
    if not proto.normalizer_spec.escape_whitespaces:
        out.append("escape_whitespaces=false")
    return out


def hf_tokenizer_files(spm_model_file: str, model_max_length: int,
                       do_lower_case: bool = True) -> HFTokenizerFiles:
    """tokenizer.json + tokenizer_config.json of `spm_model_file` (see the module docstring).

    Args:
      spm_model_file: the ALBERT SentencePiece model (with [CLS], [SEP], [MASK]).
      model_max_length: max_position_embeddings: `truncation=True` cuts to it.
      do_lower_case: lower-case as `preprocess_text(lower=True)` (the English models).
    Returns:
      The files and config.json's pad/bos/eos ids; neither (one warning logged) for a file
      that is no ALBERT SentencePiece model or uses options tokenizer.json cannot express —
      then spiece.model alone goes along, as before.
    """
    from sentencepiece import sentencepiece_model_pb2

    try:
        tokenizer = FullTokenizer(spm_model_file=spm_model_file)
    except TokenizerError as e:
        logging.warning("No tokenizer.json: %s", e)
        return HFTokenizerFiles({}, {})
    pad, unk = (tokenizer.sp_model.id_to_piece(i) for i in (tokenizer.pad_id, tokenizer.unk_id))
    special = {pad: tokenizer.pad_id, unk: tokenizer.unk_id, "[CLS]": tokenizer.cls_id,
               "[SEP]": tokenizer.sep_id, "[MASK]": tokenizer.mask_id}
    token_ids = {"pad_token_id": tokenizer.pad_id, "bos_token_id": tokenizer.cls_id,
                 "eos_token_id": tokenizer.sep_id}
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.sp_model.serialized_model_proto())
    unsupported = _unsupported(proto)
    if unsupported:
        logging.warning("%s uses %s, which a transformers tokenizer.json cannot reproduce: "
                        "no tokenizer.json written (transformers builds its own from spiece.model)",
                        spm_model_file, ", ".join(unsupported))
        return HFTokenizerFiles({}, token_ids)
    digit_comma = [p.piece for p in proto.pieces if len(p.piece) > 1 and re.search(r"\d,$", p.piece)]
    if digit_comma:
        logging.warning("%s has %d pieces ending in a digit and a comma (e.g. %r): transformers "
                        "keeps them whole where the original splits off the comma (faithfulness "
                        "§7.3, §7.5)", spm_model_file, len(digit_comma), digit_comma[0])
    config = {
        "tokenizer_class": TOKENIZER_CLASS, "model_input_names": MODEL_INPUT_NAMES,
        "model_max_length": int(model_max_length),
        # What tokenizer.json does, in AlbertTokenizer's terms (its from_pretrained reads them).
        "do_lower_case": bool(do_lower_case), "keep_accents": False, "remove_space": True,
        "bos_token": "[CLS]", "eos_token": "[SEP]", "cls_token": "[CLS]", "sep_token": "[SEP]",
        "mask_token": "[MASK]", "pad_token": pad, "unk_token": unk,
        "padding_side": "right", "truncation_side": "right",
        "clean_up_tokenization_spaces": False,
    }
    files = {TOKENIZER_FILE: _tokenizer_json(proto, special, tokenizer.unk_id, do_lower_case),
             TOKENIZER_CONFIG_FILE: config}
    return HFTokenizerFiles({name: json.dumps(value, indent=2, ensure_ascii=False) + "\n"
                             for name, value in files.items()}, token_ids)
