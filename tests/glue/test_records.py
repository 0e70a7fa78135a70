"""Feature TFRecords: original field and file names, a cache keyed by task/split/length/
tokenizer/data contents, reused when the key matches, written atomically (faithfulness §8.3)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.finetuning import feature_cache
from albert_tf.finetuning import records as shared_records
from albert_tf.glue import GlueProcessor, convert_examples_to_features, get_task
from albert_tf.glue import records
from albert_tf.tokenization import FullTokenizer


@pytest.fixture(scope="module")
def spm_tokenizer(text_assets):
    return FullTokenizer(spm_model_file=text_assets.spm_model)


def _settings(glue_dir, tokenizer, task="mrpc", split="dev", length=32, do_lower_case=True):
    source = get_task(task).path(glue_dir, split)
    return records.cache_settings(task, split, length, do_lower_case, tokenizer, source, 10)


def test_cache_files_have_the_original_names(tmp_path):
    assert records.cache_path("c", "mrpc", "train") == os.path.join("c", "mrpc_train.tf_record")
    assert records.cache_path("c", "rte", "dev") == os.path.join("c", "rte_eval.tf_record")
    assert records.cache_path("c", "rte", "test") == os.path.join("c", "rte_predict.tf_record")


def test_cache_key_changes_with_every_input(tmp_path, glue_dir, spm_tokenizer, wordpiece_vocab):
    base = _settings(glue_dir, spm_tokenizer)
    assert _settings(glue_dir, spm_tokenizer) == base  # deterministic
    others = [_settings(glue_dir, spm_tokenizer, split="train"),
              _settings(glue_dir, spm_tokenizer, task="rte"),
              _settings(glue_dir, spm_tokenizer, length=64),
              _settings(glue_dir, spm_tokenizer, do_lower_case=False),
              _settings(glue_dir, FullTokenizer(vocab_file=wordpiece_vocab))]
    assert all(feature_cache.differences(base, other) for other in others)
    data = tmp_path / "data"
    shutil.copytree(os.path.join(glue_dir, "MRPC"), data / "MRPC")
    with open(data / "MRPC" / "dev.tsv", "a") as f:
        f.write("0\t1\t2\tNew row .\tAnother row .\n")
    changed = feature_cache.differences(base, _settings(str(data), spm_tokenizer))
    assert changed and all(c.startswith("sources=") for c in changed)  # the data file changed


def test_records_round_trip_and_reuse(tmp_path, glue_dir, spm_tokenizer):
    for name in ("mrpc", "sts-b"):
        task = get_task(name)
        processor = GlueProcessor(task)
        examples = processor.get_dev_examples(glue_dir)
        features = convert_examples_to_features(examples, processor.get_labels(), 32, spm_tokenizer)
        path = records.cache_path(str(tmp_path), name, "dev")
        settings = _settings(glue_dir, spm_tokenizer, task=name)
        calls = []

        def build():
            calls.append(1)
            return features

        for _ in range(2):
            assert records.cached_records(path, settings, build, task.is_regression, True) == path
        assert calls == [1]  # built once, then reused
        assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []
        assert feature_cache.read_settings(path)["num_records"] == len(features)
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


def test_a_failed_write_leaves_no_file(tmp_path, glue_dir, spm_tokenizer, monkeypatch):
    path = records.cache_path(str(tmp_path), "mrpc", "dev")
    settings = _settings(glue_dir, spm_tokenizer)

    def build():
        raise RuntimeError("tokenizer exploded")

    with pytest.raises(RuntimeError):
        records.cached_records(path, settings, build, False, True)
    processor = GlueProcessor(get_task("mrpc"))
    features = convert_examples_to_features(processor.get_dev_examples(glue_dir),
                                            processor.get_labels(), 32, spm_tokenizer)

    def failing_encoder(columns):
        raise KeyboardInterrupt("interrupted while writing")

    monkeypatch.setattr(shared_records, "encode_examples", failing_encoder)
    with pytest.raises(KeyboardInterrupt):
        records.cached_records(path, settings, lambda: features, False, True)
    assert os.listdir(tmp_path) == []
