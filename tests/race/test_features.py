"""Features equal hand-computed layouts: placement of question and option, truncation (§10.3, Q29).

A WordPiece vocabulary of whole words makes every token predictable by hand, so the
expected id rows below are written from the vocabulary, not from the tokenizer.
"""

import numpy as np
import pytest

from albert_tf.race.examples import RaceExample, TextProcessor, article_examples
from albert_tf.race.features import check_lengths, choice_tokens, convert_examples_to_features
from albert_tf.tokenization import FullTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".",
         "where", "did", "sit", "?", "hat", "bed", "floor", "a", "dog", "ran"]
ID = {token: i for i, token in enumerate(VOCAB)}


def ids(text: str) -> list[int]:
    return [ID[token] for token in text.split()]


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory) -> FullTokenizer:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return FullTokenizer(vocab_file=str(path), do_lower_case=True)


def _example(question, options, article="The cat sat on the mat.", label=1):
    fields = {"id": "m1.txt", "article": article, "questions": [question],
              "options": [options], "answers": ["ABCD"[label]]}
    return article_examples(fields, "middle", TextProcessor(use_spm=False))[0]


def _row(features, choice, max_seq_length):
    ids_ = features.input_ids[0, choice]
    return ids_, features.input_mask[0, choice], features.segment_ids[0, choice]


def test_question_then_option_after_the_article(wordpiece):
    example = _example("Where did the cat sit?", ["on the mat", "on the hat", "on the bed",
                                                   "on the floor"])
    features = convert_examples_to_features([example], wordpiece, 20, 8)
    assert features.input_ids.shape == (1, 4, 20)
    assert features.label_ids.tolist() == [1]
    for choice, place in enumerate(["mat", "hat", "bed", "floor"]):
        # qa = "where did the cat sit ? on the <place>" is 9 tokens; the last 8 are kept.
        expected = ids(f"[CLS] the cat sat on the mat . [SEP] did the cat sit ? on the {place} [SEP]")
        got, mask, segments = _row(features, choice, 20)
        assert len(expected) == 18
        assert got.tolist() == expected + [0, 0]
        assert mask.tolist() == [1] * 18 + [0] * 2
        assert segments.tolist() == [0] * 9 + [1] * 9 + [0] * 2


def test_cloze_question_option_fills_the_blank(wordpiece):
    example = _example("The dog sat on the _ .", ["mat", "hat", "bed", "floor"])
    features = convert_examples_to_features([example], wordpiece, 24, 10)
    got, mask, segments = _row(features, 2, 24)
    expected = ids("[CLS] the cat sat on the mat . [SEP] the dog sat on the bed . [SEP]")
    assert got.tolist() == expected + [0] * (24 - len(expected))
    assert segments.tolist()[:len(expected)] == [0] * 9 + [1] * 8


def test_truncation_keeps_last_qa_tokens_and_cuts_the_article_end(wordpiece):
    example = _example("Where did the cat sit?", ["on the mat", "a mat", "the hat", "the bed"])
    features = convert_examples_to_features([example], wordpiece, 12, 4)
    got, mask, segments = _row(features, 0, 12)
    # qa "where did the cat sit ? on the mat" → its last 4 tokens "? on the mat";
    # the article keeps its first 12 − 3 − 4 = 5 tokens.
    assert got.tolist() == ids("[CLS] the cat sat on the [SEP] ? on the mat [SEP]")
    assert mask.tolist() == [1] * 12
    assert segments.tolist() == [0] * 7 + [1] * 5
    # A shorter qa leaves more room for the article: "a mat" → "sit ? a mat" (last 4), still
    # 5 article tokens; "the hat" likewise.
    assert _row(features, 1, 12)[0].tolist() == ids("[CLS] the cat sat on the [SEP] sit ? a mat [SEP]")


def test_short_qa_is_kept_whole_and_article_untouched_when_it_fits(wordpiece):
    example = _example("Where?", ["a dog", "a cat", "the mat", "the bed"], article="A dog ran.")
    features = convert_examples_to_features([example], wordpiece, 16, 8)
    got, mask, segments = _row(features, 0, 16)
    expected = ids("[CLS] a dog ran . [SEP] where ? a dog [SEP]")
    assert got.tolist() == expected + [0] * (16 - len(expected))
    assert mask.sum() == len(expected)
    assert segments.tolist() == [0] * 6 + [1] * 5 + [0] * 5


def test_choice_tokens_directly():
    tokens, segments = choice_tokens(list("abcdefgh"), list("wxyz"), 10, 3)
    assert tokens == ["[CLS]", "a", "b", "c", "d", "[SEP]", "x", "y", "z", "[SEP]"]
    assert segments == [0] * 6 + [1] * 4


def test_unlabelled_examples_get_label_zero(wordpiece):
    example = RaceExample("t1", 0, "high", "the cat sat .", ("where ? a", "b", "c", "d"), None)
    features = convert_examples_to_features([example], wordpiece, 16, 8)
    assert features.label_ids.tolist() == [0]


def test_spm_features_put_each_option_after_the_article(tokenizer):
    from albert_tf.race.examples import read_race_split
    from tests.race.conftest import fixture_dir

    examples = read_race_split(fixture_dir(), "dev").examples
    features = convert_examples_to_features(examples, tokenizer, 64, 16)
    assert features.input_ids.shape == (3, 4, 64)
    for n, example in enumerate(examples):
        context = tokenizer.tokenize(example.context)
        for j, text in enumerate(example.qa_texts):
            qa = tokenizer.tokenize(text)[-16:]
            kept = context[:64 - 3 - len(qa)]
            expected = tokenizer.convert_tokens_to_ids(["[CLS]", *kept, "[SEP]", *qa, "[SEP]"])
            row = features.input_ids[n, j]
            assert row[:len(expected)].tolist() == expected
            assert not np.any(row[len(expected):])


@pytest.mark.parametrize("seq,qa", [(10, 0), (10, 8)])
def test_bad_lengths(seq, qa):
    with pytest.raises(ValueError):
        check_lengths(seq, qa)
