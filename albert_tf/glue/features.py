"""Example → fixed-length features, as the original builds them (faithfulness §8.3).

`[CLS] a [SEP] (b [SEP])`, segment ids 0 through the first `[SEP]` and 1 for b and its
`[SEP]`, input mask 1 on real tokens, zero padding to `max_seq_length`. Pairs are cut to
`max_seq_length − 3` tokens by repeatedly dropping the last token of the longer segment
(segment b on ties); single sentences keep their first `max_seq_length − 2` tokens. A second
sentence that is empty or tokenizes to nothing (spaces, a lone combining mark) makes a
single-sentence example, as the original's `if tokens_b:` does (faithfulness §8.3).

Example:
    >>> features = convert_single_example(example, {"0": 0, "1": 1}, 128, tokenizer)
    >>> features.input_ids[:3], features.segment_ids[:3]
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from albert_tf.glue.examples import InputExample
from albert_tf.tokenization import FullTokenizer

_TOKENIZE_CHUNK = 4096


@dataclasses.dataclass
class InputFeatures:
    """One example's model inputs and label (the original's TFRecord fields)."""

    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    label_id: int | float
    is_real_example: bool = True


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """Cuts the pair in place to `max_length` tokens: pop the last token of the longer
    segment, of b when they are equally long (the original's longest-first rule)."""
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack_tokens(tokens_a: Sequence[str], tokens_b: Sequence[str] | None, max_seq_length: int,
                tokenizer: FullTokenizer) -> tuple[list[int], list[int], list[int]]:
    """(input_ids, input_mask, segment_ids) of one (pair of) token list(s), truncated and
    padded to `max_seq_length`; the shared core of the GLUE features. An empty `tokens_b`
    counts as none: `[CLS] a [SEP]` with single-sentence truncation (faithfulness §8.3)."""
    tokens_a = list(tokens_a)
    tokens_b = list(tokens_b) if tokens_b else None
    if tokens_b is not None:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[:max_seq_length - 2]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    return (input_ids + [0] * padding, input_mask + [0] * padding, segment_ids + [0] * padding)


def _label_id(example: InputExample, label_map: Mapping[str, int] | None) -> int | float:
    if label_map is None:  # regression (STS-B)
        return float(example.label)
    return label_map[example.label]


def convert_single_example(example: InputExample, label_map: Mapping[str, int] | None,
                           max_seq_length: int, tokenizer: FullTokenizer) -> InputFeatures:
    """Features of one example; `label_map` None for regression."""
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b is not None else None
    ids, mask, segments = pack_tokens(tokens_a, tokens_b, max_seq_length, tokenizer)
    return InputFeatures(ids, mask, segments, _label_id(example, label_map))


def label_map_of(label_list: Sequence[str | None]) -> dict[str, int] | None:
    """{label: id} in list order; None for STS-B's `[None]`."""
    if list(label_list) == [None]:
        return None
    return {label: i for i, label in enumerate(label_list)}


def convert_examples_to_features(examples: Sequence[InputExample],
                                 label_list: Sequence[str | None], max_seq_length: int,
                                 tokenizer: FullTokenizer) -> list[InputFeatures]:
    """Features of every example, in order (SentencePiece encodes in batches: same pieces)."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3 ([CLS] a [SEP] b [SEP]), "
                         f"got {max_seq_length}")
    label_map = label_map_of(label_list)
    features = []
    for start in range(0, len(examples), _TOKENIZE_CHUNK):
        chunk = examples[start:start + _TOKENIZE_CHUNK]
        tokens_a = tokenizer.tokenize_batch([e.text_a for e in chunk])
        with_b = [e.text_b for e in chunk if e.text_b is not None]
        tokens_b = iter(tokenizer.tokenize_batch(with_b)) if with_b else iter(())
        for example, a in zip(chunk, tokens_a):
            b = next(tokens_b) if example.text_b is not None else None
            ids, mask, segments = pack_tokens(a, b, max_seq_length, tokenizer)
            features.append(InputFeatures(ids, mask, segments, _label_id(example, label_map)))
    return features
