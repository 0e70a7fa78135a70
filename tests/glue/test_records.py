"""Feature TFRecords: original field names, a cache keyed by task/split/length/tokenizer/data,
reused when present, written atomically (spec §8.3)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.glue import GlueProcessor, convert_examples_to_features, get_task
from albert_tf.glue import records
from albert_tf.tokenization import FullTokenizer


@pytest.fixture(scope="module")
def spm_tokenizer(text_assets):
    return FullTokenizer(spm_model_file=text_assets.spm_model)


def _path(tmp_path, glue_dir, tokenizer, task="mrpc", split="dev", length=32, do_lower_case=True):
    source = get_task(task).path(glue_dir, split)
    return records.cache_path(str(tmp_path), task, split, length, tokenizer, source, True, do_lower_case)


def test_cache_name_changes_with_every_input(tmp_path, glue_dir, spm_tokenizer, wordpiece_vocab):
    base = _path(tmp_path, glue_dir, spm_tokenizer)
    assert os.path.basename(base).startswith("mrpc_dev_32_") and base.endswith(".tf_record")
    assert _path(tmp_path, glue_dir, spm_tokenizer) == base  # deterministic
    others = [_path(tmp_path, glue_dir, spm_tokenizer, split="train"),
              _path(tmp_path, glue_dir, spm_tokenizer, task="rte"),
              _path(tmp_path, glue_dir, spm_tokenizer, length=64),
              _path(tmp_path, glue_dir, spm_tokenizer, do_lower_case=False),
              _path(tmp_path, glue_dir, FullTokenizer(vocab_file=wordpiece_vocab))]
    assert len(set(others + [base])) == 6
    data = tmp_path / "data"
    shutil.copytree(os.path.join(glue_dir, "MRPC"), data / "MRPC")
    with open(data / "MRPC" / "dev.tsv", "a") as f:
        f.write("0\t1\t2\tNew row .\tAnother row .\n")
    assert _path(tmp_path, str(data), spm_tokenizer) != base  # the data file changed


def test_records_round_trip_and_reuse(tmp_path, glue_dir, spm_tokenizer):
    for name in ("mrpc", "sts-b"):
        task = get_task(name)
        processor = GlueProcessor(task)
        examples = processor.get_dev_examples(glue_dir)
        features = convert_examples_to_features(examples, processor.get_labels(), 32, spm_tokenizer)
        path = _path(tmp_path, glue_dir, spm_tokenizer, task=name)
        calls = []

        def build():
            calls.append(1)
            return features

        assert records.cached_records(path, build, task.is_regression) == path
        assert records.cached_records(path, build, task.is_regression) == path
        assert calls == [1]  # built once, then reused
        assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []
        raw = next(iter(tf.data.TFRecordDataset(path)))
        example = tf.train.Example.FromString(raw.numpy())
        assert sorted(example.features.feature) == ["input_ids", "input_mask", "is_real_example",
                                                    "label_ids", "segment_ids"]
        label = example.features.feature["label_ids"]
        assert (label.float_list.value if task.is_regression else label.int64_list.value)
        batches = list(records.eval_dataset(path, 3, 32, task.is_regression))
        inputs = np.concatenate([b[0]["input_word_ids"].numpy() for b in batches])
        labels = np.concatenate([b[1]["label_ids"].numpy() for b in batches])
        np.testing.assert_array_equal(inputs, [f.input_ids for f in features])
        np.testing.assert_allclose(labels, [f.label_id for f in features])
        assert sorted(batches[0][0]) == ["input_mask", "input_type_ids", "input_word_ids"]


def test_a_failed_write_leaves_no_file(tmp_path, glue_dir, spm_tokenizer):
    path = _path(tmp_path, glue_dir, spm_tokenizer)

    def build():
        raise RuntimeError("tokenizer exploded")

    with pytest.raises(RuntimeError):
        records.cached_records(path, build, False)
    processor = GlueProcessor(get_task("mrpc"))
    features = convert_examples_to_features(processor.get_dev_examples(glue_dir),
                                            processor.get_labels(), 32, spm_tokenizer)
    features[2].label_id = "not a number"  # fails half-way through writing
    with pytest.raises(TypeError):
        records.write_records(path, features, False)
    assert os.listdir(tmp_path) == []
