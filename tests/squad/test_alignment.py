"""Piece ↔ raw-character alignment (faithfulness §9.3): every fixture answer is rebuilt exactly."""

import pytest

from albert_tf.squad.alignment import align_pieces, banded_lcs, project, tokenize_context
from albert_tf.squad.examples import read_squad_examples
from tests.squad.conftest import fixture_path

FILES = (("train-v1.1.json", False), ("dev-v1.1.json", False), ("train-v2.0.json", True),
         ("dev-v2.0.json", True))


@pytest.mark.parametrize("lower", [True, False])
def test_every_fixture_answer_is_rebuilt_from_its_pieces(tokenizer, lower):
    checked, mismatches, contexts = 0, [], {}
    for name, v2 in FILES:
        examples, _ = read_squad_examples(fixture_path(name), False, v2)
        for example in examples:
            if example.context_text not in contexts:
                contexts[example.context_text] = tokenize_context(tokenizer, example.context_text, lower)
            tokens = contexts[example.context_text]
            assert tokens is not None, example.qas_id
            for answer in example.answers:
                first, last = tokens.piece_span(answer.answer_start,
                                                answer.answer_start + len(answer.text) - 1)
                rebuilt = tokens.span_text(example.context_text, first, last)
                checked += 1
                if rebuilt != answer.text:
                    mismatches.append((answer.text, rebuilt))
    assert checked == 240 and mismatches == []
    # The fixtures exercise what the alignment must survive.
    text = "".join(contexts)
    assert all(s in text for s in ("é", "ü", "ã", "1,200", "zürich is"))


def test_pieces_cover_raw_characters_through_accents_and_lower_case(tokenizer):
    context = "  Café  Zürich 1,234,567 …"
    tokens = tokenize_context(tokenizer, context, lower=True)
    covered = {i for s, e in zip(tokens.char_start, tokens.char_end) for i in range(s, e + 1)}
    assert covered >= {i for i, c in enumerate(context) if not c.isspace()}
    assert tokens.char_start == sorted(tokens.char_start)
    # "…" becomes three "." pieces under NFKC; each maps back to the one raw character.
    assert [context[s:e + 1] for p, s, e in zip(tokens.pieces, tokens.char_start,
                                                 tokens.char_end) if p == "."] == ["…"] * 3


def test_spurious_dummy_prefix_pieces_of_the_python3_comma_rule_are_absorbed():
    # Q2: "1998," re-encoded under Python 3 gives "▁199 ▁ 8 ," (an extra "▁" piece).
    context = "was 1998, then"
    pieces = ["▁was", "▁199", "▁", "8", ",", "▁then"]
    tokens = align_pieces(context, pieces, lower=True)
    first, last = tokens.piece_span(4, 7)
    assert (first, last) == (1, 3) and tokens.span_text(context, first, last) == "1998"
    assert tokens.span_text(context, 4, 4) == ","


def test_unalignable_context_is_rejected():
    assert align_pieces("completely different text", ["▁xyz", "q", "▁qq"], lower=True) is None


def test_banded_lcs_matches_and_prefers_up_on_ties():
    length, forward, backward = banded_lcs(list("abcd"), "abxd", band=5)
    assert length == 3 and forward == {0: 0, 1: 1, 3: 3} and backward == {0: 0, 1: 1, 3: 3}
    assert banded_lcs(list("aa"), "a", band=5)[1] == {0: 0}
    # Cells outside i − band ≤ j < i + band count as 0: a narrow band misses a far match.
    assert banded_lcs(list("xxxxab"), "ab", band=1)[0] == 0
    assert banded_lcs(list("xxxxab"), "ab", band=5)[0] == 2


@pytest.mark.parametrize("mapping, index, is_end, cap, expected", [
    ([None, 5, None, None, 9, None], 0, False, None, 0),   # no left neighbour
    ([None, 5, None, None, 9, None], 0, True, None, 4),
    ([None, 0], 0, True, None, 0),                          # no left, r = 0
    ([None, 5, None, None, 9, None], 2, False, None, 6),    # gap between l=5 and r=9
    ([None, 5, None, None, 9, None], 3, True, None, 8),
    ([3, None, 4], 1, False, None, 4),                      # adjacent: start → r
    ([3, None, 4], 1, True, None, 3),                       # adjacent: end → l
    ([None, 5, None, None, 9, None], 5, False, 12, 10),     # no right, cap given
    ([None, 5, None, None, 9, None], 5, True, 12, 11),
    ([None, 5, None, None, 9, None], 5, True, 10, 9),       # l = cap − 1
    ([None, 5, None, None, 9, None], 5, False, None, 9),    # no right, no cap
    ([None, 5, 7], 2, False, None, 7),                      # aligned
])
def test_projection_rules(mapping, index, is_end, cap, expected):
    assert project(mapping, index, is_end, cap) == expected
