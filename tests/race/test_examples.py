"""Reading RACE: the official and the original layout, levels, and bad input (faithfulness §10.2)."""

import json
import os
import shutil

import pytest

from albert_tf.race.examples import (RaceDataError, levels_to_read, read_race_split,
                                     validate_article)
from albert_tf.race.questions import qa_text
from tests.race.conftest import copy_fixtures, fixture_dir

# Questions per split of the fixture articles: (middle, high).
COUNTS = {"train": (3, 3), "dev": (2, 1), "test": (2, 1)}


def _article(data_dir, split, level, name="1.txt"):
    with open(os.path.join(data_dir, "RACE", split, level, name), encoding="utf-8") as f:
        return json.load(f)


def test_official_layout_one_example_per_question():
    data = read_race_split(fixture_dir(), "train", use_spm=True, do_lower_case=True)
    examples = data.examples
    assert len(examples) == sum(COUNTS["train"])
    # Middle first, files in natural order, questions in order.
    assert [(e.level, e.example_id, e.question_index) for e in examples] == [
        ("middle", "middle1.txt", 0), ("middle", "middle1.txt", 1), ("middle", "middle2.txt", 0),
        ("high", "high1.txt", 0), ("high", "high1.txt", 1), ("high", "high2.txt", 0)]
    assert [e.label for e in examples] == [1, 2, 0, 3, 0, 2]  # B C A D A C
    first = examples[0]
    # preprocess_text: whitespace (the "\n") collapsed, lower-cased.
    assert first.context.startswith("tom is eleven years old. every spring he plants")
    assert "\n" not in first.context and "  " not in first.context
    assert first.qa_texts[1] == "where does tom grow his tomatoes? in the garden"
    # Cloze question: the option replaces the blank.
    assert examples[1].qa_texts[2] == "tom feels happy when the first tomato turns red."


def test_natural_file_order(tmp_path):
    data_dir = copy_fixtures(tmp_path)
    middle = os.path.join(data_dir, "RACE", "train", "middle")
    article = _article(data_dir, "train", "middle", "2.txt")
    article["id"] = "middle10.txt"
    with open(os.path.join(middle, "10.txt"), "w", encoding="utf-8") as f:
        json.dump(article, f)
    ids = [e.example_id for e in read_race_split(data_dir, "train", ["middle"]).examples]
    assert ids == ["middle1.txt", "middle1.txt", "middle2.txt", "middle10.txt"]


def test_original_all_txt_layout_gives_the_same_examples(tmp_path):
    official = read_race_split(fixture_dir(), "train").examples
    data_dir = copy_fixtures(tmp_path)
    for level in ("middle", "high"):
        level_dir = os.path.join(data_dir, "RACE", "train", level)
        lines = []
        for name in sorted(os.listdir(level_dir)):
            with open(os.path.join(level_dir, name), encoding="utf-8") as f:
                lines.append(json.dumps(json.load(f)))
            os.remove(os.path.join(level_dir, name))
        with open(os.path.join(level_dir, "all.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    assert read_race_split(data_dir, "train").examples == official


def test_all_txt_is_read_alone_when_present(tmp_path):
    data_dir = copy_fixtures(tmp_path)
    middle = os.path.join(data_dir, "RACE", "train", "middle")
    shutil.copy(os.path.join(middle, "2.txt"), os.path.join(middle, "all.txt"))
    examples = read_race_split(data_dir, "train", ["middle"]).examples
    assert [e.example_id for e in examples] == ["middle2.txt"]


@pytest.mark.parametrize("high_only,middle_only,levels", [
    (False, False, ("middle", "high")), (True, False, ("high",)), (False, True, ("middle",))])
def test_level_restriction(high_only, middle_only, levels):
    assert levels_to_read(high_only, middle_only) == levels
    examples = read_race_split(fixture_dir(), "dev", levels).examples
    assert {e.level for e in examples} == set(levels)
    assert len(examples) == sum(n for level, n in zip(("middle", "high"), COUNTS["dev"])
                                if level in levels)


def test_both_level_restrictions_conflict():
    with pytest.raises(RaceDataError, match="exclude each other"):
        levels_to_read(True, True)


def test_absent_level_is_skipped_with_a_log_line(tmp_path, caplog):
    data_dir = copy_fixtures(tmp_path)
    shutil.rmtree(os.path.join(data_dir, "RACE", "dev", "high"))
    with caplog.at_level("INFO", logger="absl"):  # other tests may raise absl's level
        split = read_race_split(data_dir, "dev")
    assert [e.level for e in split.examples] == ["middle", "middle"]
    assert split.levels == ("middle",)  # the levels read, for the run's summary line
    assert any("no high directory" in r.getMessage() and "skipped" in r.getMessage()
               for r in caplog.records)


def test_no_question_at_all_is_an_error(tmp_path):
    with pytest.raises(RaceDataError, match="no RACE question found"):
        read_race_split(str(tmp_path), "dev")


def test_test_split_without_answers(tmp_path):
    data_dir = copy_fixtures(tmp_path)
    path = os.path.join(data_dir, "RACE", "test", "middle", "1.txt")
    article = _article(data_dir, "test", "middle")
    del article["answers"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(article, f)
    examples = read_race_split(data_dir, "test", require_answers=False).examples
    assert [e.label for e in examples] == [None, None, 1]
    with pytest.raises(RaceDataError, match=r"1\.txt: missing key 'answers'"):
        read_race_split(data_dir, "test", require_answers=True)


def _write(data_dir, article_or_text, name="1.txt"):
    path = os.path.join(data_dir, "RACE", "dev", "middle", name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(article_or_text if isinstance(article_or_text, str) else json.dumps(article_or_text))
    return path


@pytest.mark.parametrize("change,message", [
    (lambda a: a.pop("article"), "missing key 'article'"),
    (lambda a: a.pop("id"), "missing key 'id'"),
    (lambda a: a["answers"].__setitem__(1, "E"), "question 2: answer 'E' is not one of A, B, C, D"),
    (lambda a: a["answers"].__setitem__(0, "b"), "question 1: answer 'b' is not one of"),
    (lambda a: a["options"][0].pop(), "question 1: expected 4 options, found 3"),
    (lambda a: a["options"][1].append("x"), "question 2: expected 4 options, found 5"),
    (lambda a: a["answers"].pop(), "2 questions but 1 answers"),
    (lambda a: a.__setitem__("questions", "why?"), "'questions' must be a list"),
])
def test_bad_article_names_the_file(tmp_path, change, message):
    data_dir = copy_fixtures(tmp_path)
    article = _article(data_dir, "dev", "middle")
    change(article)
    path = _write(data_dir, article)
    with pytest.raises(RaceDataError) as error:
        read_race_split(data_dir, "dev")
    text = str(error.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_file_that_is_not_json(tmp_path):
    data_dir = copy_fixtures(tmp_path)
    path = _write(data_dir, "Anna has a dog called Max.")
    with pytest.raises(RaceDataError, match=rf"^{path}: not valid JSON"):
        read_race_split(data_dir, "dev")


def test_bad_line_of_all_txt_names_the_line(tmp_path):
    data_dir = copy_fixtures(tmp_path)
    good = json.dumps(_article(data_dir, "dev", "middle"))
    path = _write(data_dir, good + "\n\n{\"id\": \"x\"\n", name="all.txt")
    with pytest.raises(RaceDataError, match=rf"^{path}: line 3: not valid JSON"):
        read_race_split(data_dir, "dev")


def test_validate_article_returns_fields():
    fields = validate_article({"id": 7, "article": "a", "questions": ["q"],
                               "options": [["1", "2", "3", "4"]]}, "x.txt", require_answers=False)
    assert fields["id"] == "7" and fields["answers"] is None


def test_qa_text_rule():
    assert qa_text("the _ sat on the _ .", "cat") == "the cat sat on the cat ."
    assert qa_text("who sat?", "the cat") == "who sat? the cat"
