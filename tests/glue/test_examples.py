"""Every GLUE task reads from the official layout (fixtures), with GLUE's file quirks and the
original's guids and text handling (faithfulness §8.2); bad input names file and line."""

from __future__ import annotations

import os
import shutil

import pytest

from albert_tf.glue import GlueDataError, GlueProcessor, TASK_NAMES, get_task, read_tsv

# Data rows per fixture file (QQP train has one malformed row the original skips).
EXPECTED_ROWS = {
    "cola": (8, 5, 3), "sst-2": (6, 3, 2), "mrpc": (6, 4, 3), "sts-b": (8, 5, 3),
    "qqp": (4, 3, 2), "mnli": (8, 4, 3), "mismnli": (8, 3, 2), "qnli": (4, 2, 1),
    "rte": (3, 2, 1), "wnli": (3, 2, 1), "ax": (None, None, 3),
}


def test_every_task_is_registered_with_its_submission_name():
    assert set(TASK_NAMES) == set(EXPECTED_ROWS)
    names = {name: get_task(name).submission_name for name in TASK_NAMES}
    assert names == {"cola": "CoLA", "sst-2": "SST-2", "mrpc": "MRPC", "sts-b": "STS-B",
                     "qqp": "QQP", "mnli": "MNLI-m", "mismnli": "MNLI-mm", "qnli": "QNLI",
                     "rte": "RTE", "wnli": "WNLI", "ax": "AX"}
    assert get_task("MRPC") is get_task("mrpc")  # the original lower-cases task_name
    with pytest.raises(ValueError, match="unknown GLUE task 'mrcp'"):
        get_task("mrcp")


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_fixture_splits_load(glue_dir, name):
    task = get_task(name)
    processor = GlueProcessor(task, use_spm=True, do_lower_case=True)
    for split, expected in zip(("train", "dev", "test"), EXPECTED_ROWS[name]):
        if expected is None:
            with pytest.raises(GlueDataError, match="has no"):
                processor.get_examples(glue_dir, split)
            continue
        examples = processor.get_examples(glue_dir, split)
        assert len(examples) == expected
        for example in examples:
            assert example.text_a and "\r" not in example.text_a and "\ufeff" not in example.text_a
            assert (example.text_b is None) == (name in ("cola", "sst-2"))
            if task.is_regression:
                assert isinstance(example.label, float)
            else:
                assert example.label in task.labels
        if split == "test":  # guids are the index column the server expects
            assert [e.guid for e in examples] == [str(i) for i in range(expected)]
            dummy = 0.0 if task.is_regression else task.labels[0]
            assert all(e.label == dummy for e in examples)


def test_mrpc_bom_crlf_and_the_originals_guids(glue_dir):
    with open(os.path.join(glue_dir, "MRPC", "train.tsv"), "rb") as f:
        raw = f.read()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw  # the quirks are really there
    assert read_tsv(os.path.join(glue_dir, "MRPC", "train.tsv"))[0].fields[0] == "Quality"
    examples = GlueProcessor(get_task("mrpc"), use_spm=False).get_train_examples(glue_dir)
    assert [e.guid for e in examples[:2]] == ["train-1", "train-2"]  # "<split>-<line index>"
    assert examples[0].label == "1"
    assert examples[0].text_a.startswith("The council approved")  # WordPiece mode: text as is
    assert examples[0].text_b.endswith("on Tuesday .")
    cola = GlueProcessor(get_task("cola")).get_train_examples(glue_dir)
    assert cola[0].guid == "train-0"  # CoLA train has no header


def test_quotes_stay_in_the_text_and_spm_mode_preprocesses(glue_dir):
    dev = GlueProcessor(get_task("mnli"), use_spm=True, do_lower_case=True).get_dev_examples(glue_dir)
    assert dev[2].text_a == '"nobody asked for this, he said.'  # unbalanced quote, lower-cased
    assert dev[2].label == "neutral"
    cased = GlueProcessor(get_task("mnli"), use_spm=True, do_lower_case=False).get_dev_examples(glue_dir)
    assert cased[2].text_a == '"Nobody asked for this, he said.'
    qnli = GlueProcessor(get_task("qnli")).get_test_examples(glue_dir)
    assert '"water wheel' in qnli[0].text_b
    stsb = GlueProcessor(get_task("sts-b")).get_dev_examples(glue_dir)
    assert [e.label for e in stsb] == [5.0, 4.0, 1.0, 3.4, 0.2]


def test_qqp_skips_malformed_lines_like_the_original(glue_dir):
    examples = GlueProcessor(get_task("qqp")).get_train_examples(glue_dir)
    assert [e.guid for e in examples] == ["0", "1", "2", "4"]


def _copy_task(glue_dir, tmp_path, folder):
    shutil.copytree(os.path.join(glue_dir, folder), tmp_path / folder)
    return tmp_path / folder


def _append(path, line):
    with open(path, "ab") as f:
        f.write(line.encode("utf-8") if isinstance(line, str) else line)


@pytest.mark.parametrize("folder,name,split,line,message", [
    ("MRPC", "mrpc", "train", "1\t5\t6\tonly four columns\r\n",
     r"train.tsv: line 8: expected 5 tab-separated columns, found 4"),
    ("RTE", "rte", "dev", "9\ta\tb\tmaybe\n", r"dev.tsv: line 4: unknown label 'maybe'"),
    ("STS-B", "sts-b", "train", "8\tg\tf\t2024\t0008\tnone\tnone\ta\tb\thigh\n",
     r"train.tsv: line 10: score 'high' is not a number"),
    ("CoLA", "cola", "dev", b"xx\t1\t\tbad \xff byte\n", r"dev.tsv: line 6: not valid UTF-8"),
    ("QQP", "qqp", "test", "9\tonly one question\textra\tcolumns\n",
     r"test.tsv: line 4: expected 3 tab-separated columns, found 4"),
])
def test_bad_rows_name_file_and_line(glue_dir, tmp_path, folder, name, split, line, message):
    path = _copy_task(glue_dir, tmp_path, folder) / get_task(name).layout(split).filename
    _append(path, line)
    with pytest.raises(GlueDataError, match=message) as error:
        GlueProcessor(get_task(name)).get_examples(str(tmp_path), split)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_missing_file_and_empty_split(glue_dir, tmp_path):
    with pytest.raises(GlueDataError, match=r"WNLI/train.tsv: file not found"):
        GlueProcessor(get_task("wnli")).get_train_examples(str(tmp_path))
    folder = _copy_task(glue_dir, tmp_path, "WNLI")
    (folder / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n\n")
    with pytest.raises(GlueDataError, match=r"dev.tsv: no examples"):
        GlueProcessor(get_task("wnli")).get_dev_examples(str(tmp_path))
    (folder / "dev.tsv").write_text("")
    with pytest.raises(GlueDataError, match=r"dev.tsv: empty file"):
        GlueProcessor(get_task("wnli")).get_dev_examples(str(tmp_path))
