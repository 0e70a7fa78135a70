"""Reading SQuAD files: v1.1 / v2.0 fixtures, clear errors and counted skips for bad input."""

import json

import pytest

from albert_tf.squad.examples import (SquadDataError, read_squad_examples,
                                      shuffle_training_examples)
from tests.squad.conftest import fixture_path


def test_reads_v1_train_and_dev():
    train, skips = read_squad_examples(fixture_path("train-v1.1.json"), is_training=True)
    dev, _ = read_squad_examples(fixture_path("dev-v1.1.json"), is_training=False)
    assert len(train) == len(dev) == 45 and skips.total == 0
    gold = dev[3]  # "How many customers ...": two gold answers, both exact substrings
    assert [a.text for a in gold.answers] == ["about 1,200", "1,200"]
    for answer in gold.answers:
        assert gold.context_text[answer.answer_start:][:len(answer.text)] == answer.text
    assert train[0].paragraph_id == train[1].paragraph_id != train[-1].paragraph_id


def test_reads_v2_with_unanswerable_questions():
    examples, _ = read_squad_examples(fixture_path("train-v2.0.json"), True,
                                      version_2_with_negative=True)
    impossible = [e for e in examples if e.is_impossible]
    assert len(examples) == 56 and len(impossible) == 11
    assert all(e.answer_text == "" and e.answer_start == -1 for e in impossible)


def test_v2_file_without_the_flag_is_one_clear_error():
    with pytest.raises(SquadDataError) as error:
        read_squad_examples(fixture_path("dev-v2.0.json"), is_training=False)
    message = str(error.value)
    assert "\n" not in message and "dev-v2.0.json" in message
    assert "--version_2_with_negative" in message


def test_malformed_json_names_file_line_and_column():
    with pytest.raises(SquadDataError, match=r"malformed\.json: line \d+ column \d+: not valid JSON"):
        read_squad_examples(fixture_path("malformed.json"), is_training=True)


def test_broken_structure_names_the_json_path(tmp_path):
    with pytest.raises(SquadDataError, match=r'data\[0\]\.paragraphs\[0\]\.qas\[0\]: missing "question"'):
        read_squad_examples(fixture_path("missing_question.json"), is_training=True)
    path = tmp_path / "no_data.json"
    path.write_text(json.dumps({"version": "1.1"}))
    with pytest.raises(SquadDataError, match='"data" list'):
        read_squad_examples(str(path), is_training=False)
    with pytest.raises(SquadDataError, match="file not found"):
        read_squad_examples(str(tmp_path / "absent.json"), is_training=False)


def test_answer_start_not_matching_the_text_is_a_counted_skip():
    examples, skips = read_squad_examples(fixture_path("bad_answer_start.json"), is_training=True)
    assert [e.qas_id for e in examples] == ["ok_1"]
    assert skips.counts == {"answer_start does not point at the answer text": 1}
    assert skips.summary_lines() == [
        "skipped 1 question(s): answer_start does not point at the answer text (ids: bad_start_1)"]
    # Prediction files keep the question: only the text of gold answers is used there.
    examples, skips = read_squad_examples(fixture_path("bad_answer_start.json"), is_training=False)
    assert len(examples) == 2 and skips.total == 0


def test_empty_context_is_a_counted_skip():
    examples, skips = read_squad_examples(fixture_path("empty_context.json"), is_training=False)
    assert [e.qas_id for e in examples] == ["ok_1"]
    assert skips.counts == {"empty context": 1} and skips.ids["empty context"] == ["empty_1"]


def test_training_needs_exactly_one_answer():
    examples, skips = read_squad_examples(fixture_path("dev-v1.1.json"), is_training=True)
    several = sum(1 for e in read_squad_examples(fixture_path("dev-v1.1.json"), False)[0]
                  if len(e.answers) > 1)
    assert skips.counts["training question without exactly one answer"] == several > 0
    assert len(examples) == 45 - several


def test_training_shuffle_is_the_fixed_seed_permutation():
    examples, _ = read_squad_examples(fixture_path("train-v1.1.json"), is_training=True)
    first = [e.qas_id for e in shuffle_training_examples(examples)]
    assert first == [e.qas_id for e in shuffle_training_examples(examples)]
    assert sorted(first) == sorted(e.qas_id for e in examples) and first != [e.qas_id for e in examples]


def squad_file(tmp_path, context: str, answers: list[dict]) -> str:
    """A one-question training file (id "q1") with the given answers."""
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q1", "question": "Where?", "answers": answers}]}]}]}
    path = tmp_path / "train.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("answer_start,end", [(30, 35), (-1, 4), (26, 31)])
def test_training_answer_outside_its_context_is_an_error(tmp_path, answer_start, end):
    # The context has 30 characters; "Paris" is 5 long, so [26, 31) overruns by one.
    context = "The café stands in Paris now."
    context += " " * (30 - len(context))
    path = squad_file(tmp_path, context, [{"text": "Paris", "answer_start": answer_start}])
    with pytest.raises(SquadDataError) as error:
        read_squad_examples(path, is_training=True)
    assert str(error.value) == (
        f"{path}: data[0].paragraphs[0].qas[0]: question 'q1': answer span "
        f"[{answer_start}, {end}) (answer_start + length of its text) lies outside its "
        f"context [0, 30)")
    # Prediction files only use the answers' text: the question is kept.
    examples, skips = read_squad_examples(path, is_training=False)
    assert [e.qas_id for e in examples] == ["q1"] and skips.total == 0


def test_answer_at_the_very_end_of_the_context_is_fine(tmp_path):
    context = "The café stands in Paris"
    path = squad_file(tmp_path, context, [{"text": "Paris", "answer_start": 19}])
    examples, skips = read_squad_examples(path, is_training=True)
    assert [e.answer_start for e in examples] == [19] and skips.total == 0
