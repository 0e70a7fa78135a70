"""The one cache policy, for each task: another SentencePiece model under the same file name
never reuses stale features (the bug of SQuAD's name-keyed cache)."""

from __future__ import annotations

import os
import shutil

import pytest

from albert_tf.finetuning import feature_cache
from albert_tf.glue.runner import GlueRun, GlueRunOptions
from albert_tf.race.runner import RaceRun, RaceRunOptions
from albert_tf.squad.runner import SquadRun, SquadRunOptions
from tests.glue.conftest import FIXTURES as GLUE_DIR
from tests.race.conftest import fixture_dir as race_dir
from tests.squad.conftest import fixture_path as squad_file
from tests.text_assets import swapped_pieces_model


def _glue(config_file, spm, out):
    run = GlueRun(GlueRunOptions(data_dir=GLUE_DIR, task_name="mrpc", output_dir=out,
                                 albert_config_file=config_file, spm_model_file=spm,
                                 max_seq_length=32, do_eval=True)).prepare()
    return run.records["dev"]


def _race(config_file, spm, out):
    run = RaceRun(RaceRunOptions(data_dir=race_dir(), output_dir=out, do_train=False,
                                 albert_config_file=config_file, spm_model_file=spm,
                                 max_seq_length=64, max_qa_length=16)).prepare()
    return run.records["dev"]


def _squad(config_file, spm, out):
    run = SquadRun(SquadRunOptions(output_dir=out, albert_config_file=config_file,
                                   spm_model_file=spm, predict_file=squad_file("dev-v1.1.json"),
                                   do_predict=True, max_seq_length=64, doc_stride=24,
                                   max_query_length=16)).prepare()
    return run.records["predict"]


@pytest.mark.parametrize("make_run", [_glue, _race, _squad], ids=["glue", "race", "squad"])
def test_same_file_name_other_sentencepiece_model_rebuilds(make_run, config_file, spm_model,
                                                           tmp_path):
    spm = str(tmp_path / "spm" / "30k-clean.model")
    os.makedirs(os.path.dirname(spm))
    shutil.copy(spm_model, spm)
    out = str(tmp_path / "out")
    path = make_run(config_file, spm, out)
    before = feature_cache.read_settings(path)
    with open(path, "rb") as f:
        records_before = f.read()

    swapped_pieces_model(spm_model, spm)  # another model, same file name
    assert make_run(config_file, spm, out) == path
    after = feature_cache.read_settings(path)
    assert [c.split("=")[0] for c in feature_cache.differences(before, after)] == ["tokenizer"]
    with open(path, "rb") as f:
        assert f.read() != records_before  # "▁the" and "▁of" have other ids now
    # Had the user named the file, going back to the first model would be refused instead.
    with pytest.raises(feature_cache.FeatureCacheError,
                       match=rf"{os.path.basename(path)}: cached features were built with "
                             rf"tokenizer='{after['tokenizer']}' \(now '{before['tokenizer']}'\)"):
        feature_cache.cached_features(path, {**after, "tokenizer": before["tokenizer"]},
                                      build=None, owned=False)
