"""Up-front record checks: lengths, record kind and vocabulary against the flags and the
config, from the first record and from create_pretraining_data's JSON summary."""

from __future__ import annotations

import dataclasses

import pytest

from albert_tf.data import features as F
from albert_tf.data.example_codec import encode_examples
from albert_tf.data.generation import GenerationOptions, generate
from albert_tf.data.masking import MaskingOptions
from albert_tf.data.record_checks import (RecordExpectations, RecordMismatchError,
                                          check_record_files, resolve_files)
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter
from albert_tf.tokenization import FullTokenizer
from tests.data import record_files
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

EXPECT = RecordExpectations(max_seq_length=32, max_predictions_per_seq=6, vocab_size=100,
                            vocab_source="--albert_config_file=c.json")


def one_line_error(files, expected=EXPECT) -> str:
    with pytest.raises(RecordMismatchError) as error:
        check_record_files(files, expected)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_matching_files_pass_with_and_without_summary(tmp_path):
    plain = record_files.write(str(tmp_path / "a.tfrecord"), record_files.rows(4, 32, 6))
    summarized = record_files.write(str(tmp_path / "b.tfrecord"), record_files.rows(4, 32, 6),
                                    summary=record_files.summary_of(F.STATIC, 32, 6, 100))
    assert check_record_files([plain, summarized], EXPECT) == 2


def test_sequence_length_mismatch_names_both_lengths_and_the_file(tmp_path):
    path = record_files.write(str(tmp_path / "short.tfrecord"), record_files.rows(2, 16, 6))
    message = one_line_error([path])
    assert message == (f"{path}: records hold 16 tokens per record (input_ids) but "
                       f"--max_seq_length=32; pass --max_seq_length=16 or rewrite the records")
    # The summary is read first: it names itself.
    record_files.write(path, record_files.rows(2, 16, 6),
                       summary=record_files.summary_of(F.STATIC, 16, 6, 100))
    assert f"(per {path}.json): records hold 16 tokens" in one_line_error([path])


def test_prediction_slots_mismatch(tmp_path):
    path = record_files.write(str(tmp_path / "p.tfrecord"), record_files.rows(2, 32, 10))
    message = one_line_error([path])
    assert "records hold 10 masked-LM slots per record (masked_lm_ids)" in message
    assert "--max_predictions_per_seq=6" in message and path in message


def test_record_kind_mismatch_both_ways(tmp_path):
    dynamic = record_files.write(str(tmp_path / "d.tfrecord"), record_files.rows(2, 32, 6),
                                 kind=F.DYNAMIC)
    assert "pass --dynamic_masking" in one_line_error([dynamic])
    static = record_files.write(str(tmp_path / "s.tfrecord"), record_files.rows(2, 32, 6))
    expected = dataclasses.replace(EXPECT, kind=F.DYNAMIC)
    assert "--dynamic_masking needs records written with --dynamic_masking_records" in \
        one_line_error([static], expected)


def test_summary_vocabulary_larger_than_the_config(tmp_path):
    path = record_files.write(str(tmp_path / "v.tfrecord"), record_files.rows(2, 32, 6),
                              summary=record_files.summary_of(F.STATIC, 32, 6, 1201))
    message = one_line_error([path])
    assert message.startswith(f"{path}: written with a vocabulary of 1201 pieces ({path}.json) "
                              f"but vocab_size is 100 in --albert_config_file=c.json")


def test_first_record_id_past_the_vocabulary_without_summary(tmp_path):
    features = record_files.rows(2, 32, 6)
    features["input_ids"][0, 3] = 1201
    path = record_files.write(str(tmp_path / "old.tfrecord"), features)
    message = one_line_error([path])
    assert "first record's input_ids holds token id 1201, but vocab_size is 100" in message


@pytest.mark.parametrize("made_for,flag,error", [
    # Records of a sentence task train that task's head, or the masked LM alone ("none").
    ("sop", None, None), ("nsp", None, None), ("sop", "sop", None), ("nsp", "nsp", None),
    ("sop", "none", None), ("nsp", "none", None), ("none", "none", None),
    (None, "nsp", None),  # a summary without the field (older records): nothing to check
    ("sop", "nsp", "made for --sentence_prediction=sop ({path}.json) but --sentence_prediction=nsp; "
                   "pass --sentence_prediction=sop (or none: masked LM alone) or rewrite the "
                   "records with --sentence_prediction=nsp"),
    ("nsp", "sop", "made for --sentence_prediction=nsp ({path}.json) but --sentence_prediction=sop"),
    ("none", "sop", "made for --sentence_prediction=none ({path}.json) but --sentence_prediction=sop"),
    ("none", None, "made for --sentence_prediction=none ({path}.json): its sentence labels mark "
                   "only one-sentence chunks (Q10); pass --sentence_prediction=none"),
])
def test_sentence_task_of_the_summary_against_the_flag(tmp_path, made_for, flag, error):
    summary = record_files.summary_of(F.STATIC, 32, 6, 100)
    if made_for is not None:
        summary["sentence_prediction"] = made_for
    path = record_files.write(str(tmp_path / "t.tfrecord"), record_files.rows(2, 32, 6),
                              summary=summary)
    expected = dataclasses.replace(EXPECT, sentence_prediction=flag)
    if error is None:
        assert check_record_files([path], expected) == 1
    else:
        assert one_line_error([path], expected).startswith(f"{path}: " + error.format(path=path))


def test_not_a_record_file_and_no_records(tmp_path):
    text = tmp_path / "corpus.txt"
    text.write_text("One sentence per line.\nAnother one here.\n")
    assert one_line_error([str(text)]).startswith(f"{text}: not a TFRecord file")
    empty = record_files.write(str(tmp_path / "empty.tfrecord"), record_files.rows(0, 32, 6))
    assert one_line_error([empty]) == f"--input_file: no records in {empty}"
    # An empty shard among good ones is fine.
    good = record_files.write(str(tmp_path / "good.tfrecord"), record_files.rows(2, 32, 6))
    assert check_record_files([empty, good], EXPECT) == 1


def test_records_of_another_kind_are_named(tmp_path):
    """E.g. a GLUE feature cache given as --input_file."""
    features = record_files.rows(2, 32, 6)
    glue = {name: features[name] for name in ("input_ids", "input_mask", "segment_ids")}
    glue["label_ids"] = features["next_sentence_labels"]
    path = str(tmp_path / "glue.tf_record")
    with AtomicTFRecordWriter(path) as writer:
        writer.write_many(encode_examples({k: ("int64", v) for k, v in glue.items()}))
    assert one_line_error([path]) == (
        f"{path}: first record lacks next_sentence_labels, masked_lm_positions, masked_lm_ids, "
        f"masked_lm_weights; not a create_pretraining_data record")


def test_unreadable_summary_is_one_line(tmp_path):
    path = record_files.write(str(tmp_path / "j.tfrecord"), record_files.rows(2, 32, 6))
    (tmp_path / "j.tfrecord.json").write_text("{not json")
    assert one_line_error([path]).startswith(f"{path}.json: not a valid JSON summary")


def test_resolve_files_names_the_pattern(tmp_path):
    with pytest.raises(FileNotFoundError, match="none-"):
        resolve_files(str(tmp_path / "none-*.tfrecord"))


def test_summaries_written_by_create_pretraining_data_are_understood(text_assets, tmp_path):  # noqa: F811
    """Real records and summary (generate = create_pretraining_data's library call)."""
    corpus = tmp_path / "corpus.txt"
    with open(text_assets.corpus, encoding="utf-8") as f:
        corpus.write_text("".join(f.readlines()[:300]), encoding="utf-8")
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    masking = MaskingOptions(vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id,
                             cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                             max_predictions_per_seq=5)
    path = str(tmp_path / "real.tfrecord")
    generate(str(corpus), [path], tokenizer, GenerationOptions(max_seq_length=24, dupe_factor=1,
                                                               masking=masking),
             log=lambda message: None)
    fits = RecordExpectations(24, 5, vocab_size=tokenizer.vocab_size)
    assert check_record_files([path], fits) == 1
    smaller = dataclasses.replace(fits, vocab_size=tokenizer.vocab_size - 1)
    assert f"vocabulary of {tokenizer.vocab_size} pieces" in one_line_error([path], smaller)
    assert "records hold 24 tokens" in one_line_error([path], dataclasses.replace(fits, max_seq_length=32))
