"""`python -m albert_tf.create_pretraining_data` end to end (faithfulness §5): record format, the
original's parse spec, determinism for any --num_workers, summaries and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data.tfrecord_io import read_records
from albert_tf.tokenization import FullTokenizer
from tests.data.test_records import original_feature_spec
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

CLS, SEP, MASK = 2, 3, 4


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-m", "albert_tf.create_pretraining_data", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def read_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The error lines of stderr: ours (`create_pretraining_data: error: …`) or logged ones."""
    return [line for line in result.stderr.splitlines()
            if line.startswith("create_pretraining_data: error: ") or line.startswith("E")]


@pytest.fixture(scope="module")
def small_corpus(text_assets, tmp_path_factory) -> str:  # noqa: F811
    """The first ~60 documents of the built-in corpus."""
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    with open(text_assets.corpus, encoding="utf-8") as f:
        path.write_text("".join(f.readlines()[:2500]), encoding="utf-8")
    return str(path)


def base_args(corpus: str, model: str, output: str, *extra: str) -> list[str]:
    return [f"--input_file={corpus}", f"--output_file={output}", f"--spm_model_file={model}",
            "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2", *extra]


def parse_rows(records: list[bytes], spec: dict) -> list[dict]:
    """Each record parsed with `spec` (one `tf.io.parse_example` over all of them)."""
    if not records:
        return []
    parsed = {k: v.numpy() for k, v in tf.io.parse_example(records, spec).items()}
    return [{k: v[i] for k, v in parsed.items()} for i in range(len(records))]


def parse_all(path: str, seq: int, predictions: int) -> list[dict]:
    return parse_rows(list(read_records(path)), original_feature_spec(seq, predictions))


def test_records_parse_with_the_original_spec(small_corpus, text_assets, tmp_path):  # noqa: F811
    outputs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    result = run_cli(*base_args(small_corpus, text_assets.spm_model, ",".join(outputs)))
    assert result.returncode == 0, result.stderr
    assert "total instances" in result.stderr
    summaries = [read_json(p + ".json") for p in outputs]
    total = summaries[0]["instances_all_outputs"]
    rows = []
    parsed = [parse_all(path, 64, 10) for path in outputs]
    for rows_of_file, summary in zip(parsed, summaries):
        assert len(rows_of_file) == summary["instances"] and summary["record_kind"] == "static"
        rows += rows_of_file
    assert len(rows) == total and abs(len(parsed[0]) - total / 2) <= 1  # round-robin
    labels = summaries[0]["next_sentence_labels"]
    assert labels["0_in_order"] + labels["1_swapped_or_random"] == total
    assert summaries[0]["flags"]["max_seq_length"] == 64 and summaries[0]["special_ids"]["[MASK]"] == MASK
    # What run_pretraining checks the records against before training (record_checks).
    tokenizer_size = FullTokenizer(spm_model_file=text_assets.spm_model).vocab_size
    for summary in summaries:
        assert (summary["record_kind"], summary["max_seq_length"], summary["max_predictions_per_seq"],
                summary["prediction_slots"], summary["vocab_size"]) == ("static", 64, 10, 10, tokenizer_size)
    for row in rows:
        length = int(row["input_mask"].sum())
        assert np.all(row["input_mask"][:length] == 1) and np.all(row["input_mask"][length:] == 0)
        ids, segments = row["input_ids"], row["segment_ids"]
        # Layout [CLS] A [SEP] B [SEP]: the structural [SEP]s follow from the segment ids (a
        # random replacement may also put a [SEP] id elsewhere, Q9).
        first_sep = int((segments[:length] == 0).sum()) - 1
        seps = np.array([first_sep, length - 1])
        assert ids[0] == CLS and np.all(ids[seps] == SEP) and 2 <= first_sep <= length - 3
        # Segment ids: 0 for [CLS] A [SEP], 1 for B [SEP], 0 on padding (§5.3.6).
        assert np.all(segments[:seps[0] + 1] == 0) and np.all(segments[seps[0] + 1:length] == 1)
        assert np.all(segments[length:] == 0) and np.all(ids[length:] == 0)
        # token_boundary: 1 on [CLS]/[SEP], 0 on padding.
        assert row["token_boundary"][0] == 1 and np.all(row["token_boundary"][seps] == 1)
        assert np.all(row["token_boundary"][length:] == 0)
        weights, positions = row["masked_lm_weights"], row["masked_lm_positions"]
        count = int(weights.sum())
        assert 1 <= count <= min(10, max(1, round(length * 0.15)))
        assert np.all(weights[:count] == 1) and np.all(weights[count:] == 0)
        real = positions[:count]
        assert np.all(np.diff(real) > 0) and np.all(real < length)
        assert not np.isin(real, [0, *seps]).any()  # never on [CLS]/[SEP]
        assert np.all(positions[count:] == 0) and np.all(row["masked_lm_ids"][count:] == 0)
        assert row["next_sentence_labels"][0] in (0, 1)


def test_output_identical_for_any_worker_count(small_corpus, text_assets, tmp_path):  # noqa: F811
    outputs = {}
    for name, extra in [("w1", ["--num_workers=1"]), ("w2", ["--num_workers=2"]),
                        ("again", ["--num_workers=2"]), ("seed", ["--num_workers=2", "--random_seed=7"])]:
        out = str(tmp_path / f"{name}.tfrecord")
        result = run_cli(*base_args(small_corpus, text_assets.spm_model, out, *extra))
        assert result.returncode == 0, result.stderr
        outputs[name] = open(out, "rb").read()
    assert outputs["w1"] == outputs["w2"] == outputs["again"]
    assert outputs["seed"] != outputs["w1"]


def test_dynamic_masking_records_are_unmasked(small_corpus, text_assets, tmp_path):  # noqa: F811
    out = str(tmp_path / "dyn.tfrecord")
    result = run_cli(*base_args(small_corpus, text_assets.spm_model, out, "--dynamic_masking_records"))
    assert result.returncode == 0, result.stderr
    spec = {k: v for k, v in original_feature_spec(64, 10).items() if not k.startswith("masked_lm")}
    records = list(read_records(out))
    for record in records:
        features = tf.train.Example.FromString(record).features.feature
        assert not any(k.startswith("masked_lm") for k in features)
    rows = parse_rows(records, spec)
    assert len(rows) == len(records) and records
    for row in rows:
        assert MASK not in row["input_ids"]  # raw text never encodes to a control symbol
    summary = read_json(out + ".json")
    assert summary["record_kind"] == "dynamic" and summary["instances"] == len(records)


def test_permutation_records_have_2m_slots(small_corpus, text_assets, tmp_path):  # noqa: F811
    out = str(tmp_path / "perm.tfrecord")
    result = run_cli(*base_args(small_corpus, text_assets.spm_model, out, "--do_permutation"))
    assert result.returncode == 0, result.stderr
    rows = parse_all(out, 64, 20)  # M · (1 + do_permutation), faithfulness §5.8 / Q13
    assert max(int(r["masked_lm_weights"].sum()) for r in rows) > 10


# ----- bad input: one clear error line, non-zero exit, no output left behind -----
def assert_clean_failure(result, tmp_path, *needles):
    assert result.returncode == 1
    errors = error_lines(result)
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert "Traceback" not in result.stderr
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith("out")]
    assert leftovers == [], leftovers


def test_invalid_utf8_names_file_and_line(text_assets, tmp_path):  # noqa: F811
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"First sentence here.\nSecond one.\n\nAnother \xff document line.\nMore text.\n")
    out = str(tmp_path / "out.tfrecord")
    result = run_cli(*base_args(str(bad), text_assets.spm_model, out))
    assert_clean_failure(result, tmp_path, f"{bad}:4", "invalid UTF-8")
    result = run_cli(*base_args(str(bad), text_assets.spm_model, out, "--invalid_utf8=skip_line"))
    assert result.returncode == 0, result.stderr
    assert read_json(out + ".json")["input"]["invalid_utf8_lines"] == 1


def test_empty_file_is_skipped_and_counted(small_corpus, text_assets, tmp_path):  # noqa: F811
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = str(tmp_path / "out.tfrecord")
    result = run_cli(*base_args(f"{small_corpus},{empty}", text_assets.spm_model, out))
    assert result.returncode == 0, result.stderr
    assert read_json(out + ".json")["input"]["empty_files"] == [str(empty)]
    assert "skipped empty input file" in result.stderr
    os.remove(out)
    os.remove(out + ".json")
    result = run_cli(*base_args(str(empty), text_assets.spm_model, out))
    assert_clean_failure(result, tmp_path, "--input_file", "no text")


def test_single_sentence_documents_are_counted(text_assets, tmp_path):  # noqa: F811
    text = tmp_path / "one.txt"
    text.write_text("The only sentence of the first document.\n\nA second document has one line too.\n\n"
                    "The third has two sentences. \nHere is the second one.\n")
    out = str(tmp_path / "out.tfrecord")
    result = run_cli(*base_args(str(text), text_assets.spm_model, out, "--dynamic_masking_records"))
    assert result.returncode == 0, result.stderr
    summary = read_json(out + ".json")
    assert summary["documents"] == 3 and summary["single_sentence_documents"] == 2
    assert "single-sentence document" in result.stderr


@pytest.mark.parametrize("flag, value, needle", [
    ("--spm_model_file", "{tmp}/missing.model", "--spm_model_file"),
    ("--spm_model_file", "", "--vocab_file"),  # neither tokenizer given
    ("--max_seq_length", "4", "--max_seq_length=4"),
    ("--input_file", "{tmp}/nothing-*.txt", "--input_file"),
    ("--random_next_sentence", "true --sentence_prediction=sop", "--random_next_sentence conflicts"),
])
def test_bad_flags(small_corpus, text_assets, tmp_path, flag, value, needle):  # noqa: F811
    out = str(tmp_path / "out.tfrecord")
    args = [a for a in base_args(small_corpus, text_assets.spm_model, out) if not a.startswith(flag + "=")]
    result = run_cli(*args, *f"{flag}={value.format(tmp=tmp_path)}".split(" "))
    assert_clean_failure(result, tmp_path, needle)


def test_sentence_task_is_in_the_summary(small_corpus, text_assets, tmp_path):  # noqa: F811
    """--sentence_prediction=none: text-order pairs (label 0 except one-sentence chunks, Q10),
    named in the .json summary that run_pretraining checks."""
    counts = {}
    for task in ("sop", "none"):
        out = str(tmp_path / f"{task}.tfrecord")
        result = run_cli(*base_args(small_corpus, text_assets.spm_model, out,
                                    f"--sentence_prediction={task}"))
        assert result.returncode == 0, result.stderr
        summary = read_json(out + ".json")
        assert summary["sentence_prediction"] == task
        counts[task] = summary["next_sentence_labels"]
    # Same pairs: "none" keeps SOP's label-1 pairs that are random-document Bs, no swaps.
    assert counts["none"]["1_swapped_or_random"] < counts["sop"]["1_swapped_or_random"]
    assert sum(counts["none"].values()) == sum(counts["sop"].values())


def test_sentencepiece_model_as_vocab_file(small_corpus, text_assets, tmp_path):  # noqa: F811
    """Q21: a SentencePiece model passed as the WordPiece vocab is named as such."""
    out = str(tmp_path / "out.tfrecord")
    args = [a for a in base_args(small_corpus, text_assets.spm_model, out) if not a.startswith("--spm_model_file")]
    result = run_cli(*args, f"--vocab_file={text_assets.spm_model}")
    assert_clean_failure(result, tmp_path, "--vocab_file", "is a SentencePiece model")


def test_instance_dumps_only_at_verbosity_1(small_corpus, text_assets, tmp_path):  # noqa: F811
    """The default log is progress and the summary; the original's dump of the first 20
    instances (tokens and every feature, 10 lines each) needs --verbosity=1."""
    quiet = run_cli(*base_args(small_corpus, text_assets.spm_model, str(tmp_path / "a.tfrecord")))
    assert quiet.returncode == 0, quiet.stderr
    assert "*** Example" not in quiet.stderr and "tokens: [CLS]" not in quiet.stderr
    assert "Wrote " in quiet.stderr and len(quiet.stderr.splitlines()) < 20
    verbose = run_cli(*base_args(small_corpus, text_assets.spm_model, str(tmp_path / "b.tfrecord"),
                                 "--verbosity=1"))
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stderr.count("*** Example") == 20
    assert "tokens: [CLS]" in verbose.stderr and "masked_lm_positions: " in verbose.stderr
