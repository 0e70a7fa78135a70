"""RACE example → four fixed-length sequences, as the original builds them (faithfulness §10.3, Q29).

For each option: `qa_tokens = tokenize(question + option)[-max_qa_length:]` — the **last**
tokens are kept, so a long question loses its beginning and the option survives; the article
is cut at its end to `max_seq_length − 3 − len(qa_tokens)` tokens when needed;
`[CLS] article [SEP] qa [SEP]`, segment ids 0 through the first `[SEP]` and 1 for qa and the
last `[SEP]`, mask 1 on real tokens, zero padding. Unlabelled examples get label 0 (never
trained on; metrics read the labels of the examples themselves).

Example:
    >>> features = convert_examples_to_features(examples, tokenizer, 512, 128)
    >>> features.input_ids.shape        # [N, 4, 512]
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from albert_tf.race.examples import NUM_OPTIONS, RaceExample
from albert_tf.tokenization import FullTokenizer

_CHUNK = 1024


@dataclasses.dataclass
class RaceFeatures:
    """Model inputs of N examples: int32 [N, 4, S] arrays and int32 [N] labels."""

    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray
    label_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.label_ids)


def check_lengths(max_seq_length: int, max_qa_length: int) -> None:
    """Raises ValueError unless 1 ≤ max_qa_length ≤ max_seq_length − 3 (room for the
    three special tokens; the original breaks otherwise, and `[-0:]` would keep everything)."""
    if max_qa_length < 1:
        raise ValueError(f"max_qa_length must be >= 1, got {max_qa_length}")
    if max_qa_length > max_seq_length - 3:
        raise ValueError(f"max_qa_length ({max_qa_length}) must be at most max_seq_length − 3 "
                         f"({max_seq_length - 3})")


def choice_tokens(context_tokens: Sequence[str], qa_tokens: Sequence[str], max_seq_length: int,
                  max_qa_length: int) -> tuple[list[str], list[int]]:
    """(tokens, segment ids) of one option's sequence, before ids and padding (Q29 kept)."""
    qa = list(qa_tokens)[-max_qa_length:]
    context = list(context_tokens)
    if len(context) + len(qa) > max_seq_length - 3:
        context = context[:max_seq_length - 3 - len(qa)]
    tokens = ["[CLS]", *context, "[SEP]", *qa, "[SEP]"]
    segment_ids = [0] * (len(context) + 2) + [1] * (len(qa) + 1)
    return tokens, segment_ids


def convert_examples_to_features(examples: Sequence[RaceExample], tokenizer: FullTokenizer,
                                 max_seq_length: int, max_qa_length: int) -> RaceFeatures:
    """Features of every example, in order. Each article is tokenized once per chunk."""
    check_lengths(max_seq_length, max_qa_length)
    n = len(examples)
    shape = (n, NUM_OPTIONS, max_seq_length)
    input_ids = np.zeros(shape, np.int32)
    input_mask = np.zeros(shape, np.int32)
    segment_ids = np.zeros(shape, np.int32)
    labels = np.array([0 if e.label is None else e.label for e in examples], np.int32)
    for start in range(0, n, _CHUNK):
        chunk = examples[start:start + _CHUNK]
        contexts = list(dict.fromkeys(e.context for e in chunk))
        context_tokens = dict(zip(contexts, tokenizer.tokenize_batch(contexts)))
        qa_tokens = tokenizer.tokenize_batch([t for e in chunk for t in e.qa_texts])
        for offset, example in enumerate(chunk):
            row = start + offset
            for j in range(NUM_OPTIONS):
                tokens, segments = choice_tokens(context_tokens[example.context],
                                                 qa_tokens[offset * NUM_OPTIONS + j],
                                                 max_seq_length, max_qa_length)
                length = len(tokens)
                input_ids[row, j, :length] = tokenizer.convert_tokens_to_ids(tokens)
                input_mask[row, j, :length] = 1
                segment_ids[row, j, :length] = segments
    return RaceFeatures(input_ids, input_mask, segment_ids, labels)
