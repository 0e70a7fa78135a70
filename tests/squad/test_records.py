"""SQuAD's feature caches under the shared policy: round trip, reuse, stale files, atomicity."""

import logging
import os

import pytest

from albert_tf.data.example_codec import decode_example
from albert_tf.data.tfrecord_io import read_records
from albert_tf.finetuning import feature_cache as shared
from albert_tf.finetuning import records as shared_records
from albert_tf.squad import records as feature_cache
from albert_tf.squad.examples import read_squad_examples
from albert_tf.squad.features import FeatureBuilder
from tests.squad.conftest import fixture_path

SOURCE = fixture_path("dev-v1.1.json")


@pytest.fixture(scope="module")
def examples_and_features(tokenizer):
    examples, _ = read_squad_examples(SOURCE, False)
    builder = FeatureBuilder(tokenizer, max_seq_length=64, doc_stride=24, max_query_length=16)
    return examples, builder.build(examples, with_labels=True)


def _settings(tokenizer, role="train", max_seq_length=64):
    return feature_cache.cache_settings(role, SOURCE, tokenizer, max_seq_length, 24, 16, True,
                                        False)


class Builds:
    """A build function that counts its calls."""

    def __init__(self, features):
        self.features, self.calls = features, 0

    def __call__(self):
        self.calls += 1
        return self.features


def test_train_records_round_trip_reuse_and_stale_files(tokenizer, tmp_path,
                                                         examples_and_features):
    _, features = examples_and_features
    path = str(tmp_path / "train.tf_record")
    build = Builds(features)
    settings = _settings(tokenizer)
    assert feature_cache.cached_train_records(path, settings, build, owned=True) == path
    records = [decode_example(r) for r in read_records(path)]
    assert len(records) == len(features)
    assert records[3]["input_ids"] == features[3].input_ids.tolist()
    assert [r["start_positions"][0] for r in records] == [f.start_position for f in features]
    assert shared.read_settings(path)["num_records"] == len(features)

    feature_cache.cached_train_records(path, settings, build, owned=True)
    assert build.calls == 1  # reused
    longer = _settings(tokenizer, max_seq_length=128)
    with pytest.raises(shared.FeatureCacheError,
                       match=r"train\.tf_record: cached features were built with "
                             r"max_seq_length=64 \(now 128\); delete the file"):
        feature_cache.cached_train_records(path, longer, build, owned=False)  # the user's file
    feature_cache.cached_train_records(path, longer, build, owned=True)  # ours: rebuilt
    assert build.calls == 2 and shared.read_settings(path)["max_seq_length"] == 128


def test_prediction_pair_is_reused_only_with_its_feature_file(tokenizer, tmp_path,
                                                              examples_and_features):
    examples, features = examples_and_features
    record_path, left_path = str(tmp_path / "eval.tf_record"), str(tmp_path / "eval_features.pkl")
    settings, qas_ids = _settings(tokenizer, "predict"), [e.qas_id for e in examples]
    build = Builds(features)
    built = feature_cache.cached_predict_features(record_path, left_path, settings, build, True,
                                                  qas_ids)
    assert "start_positions" not in decode_example(next(read_records(record_path)))
    reused = feature_cache.cached_predict_features(record_path, left_path, settings, build, True,
                                                   qas_ids)
    assert build.calls == 1
    assert [f.char_start for f in reused] == [f.char_start for f in built]
    assert reused[0].input_ids.size == 0  # the arrays live in the TFRecord only
    with pytest.raises(shared.FeatureCacheError, match="do not match the predict file"):
        feature_cache.cached_predict_features(record_path, left_path, settings, build, True,
                                              qas_ids[1:])
    # A feature file of another run next to these records: refused when named, else rebuilt.
    feature_cache.write_left_features(left_path, features, _settings(tokenizer, "predict", 96))
    with pytest.raises(shared.FeatureCacheError,
                       match=r"eval_features\.pkl: max_seq_length=96 \(now 64\)"):
        feature_cache.cached_predict_features(record_path, left_path, settings, build, False,
                                              qas_ids)
    feature_cache.cached_predict_features(record_path, left_path, settings, build, True, qas_ids)
    assert build.calls == 2
    assert feature_cache.load_left_features(left_path)[1] == settings


def test_named_file_without_sidecar_is_reused_with_a_warning(tokenizer, tmp_path, caplog,
                                                             examples_and_features):
    """E.g. a cache the original wrote: no key to compare, so the user's file is trusted."""
    _, features = examples_and_features
    path = str(tmp_path / "train.tf_record")
    build = Builds(features)
    feature_cache.cached_train_records(path, _settings(tokenizer), build, owned=True)
    os.remove(shared.settings_path(path))
    with caplog.at_level(logging.WARNING, logger="absl"):
        feature_cache.cached_train_records(path, _settings(tokenizer), build, owned=False)
    assert build.calls == 1 and "without a settings record" in caplog.text
    feature_cache.cached_train_records(path, _settings(tokenizer), build, owned=True)
    assert build.calls == 2  # ours without a sidecar: an interrupted build, made again


def test_an_interrupted_write_leaves_no_file(tokenizer, tmp_path, monkeypatch,
                                             examples_and_features):
    _, features = examples_and_features
    calls = []

    def failing_encoder(columns):
        calls.append(1)
        raise KeyboardInterrupt("interrupted while writing")

    monkeypatch.setattr(shared_records, "encode_examples", failing_encoder)
    with pytest.raises(KeyboardInterrupt):
        feature_cache.cached_train_records(str(tmp_path / "train.tf_record"),
                                           _settings(tokenizer), Builds(features), owned=True)
    assert calls and os.listdir(tmp_path) == []
