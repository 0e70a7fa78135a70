"""Which flag gives the config and the tokenizer (albert_tf.checkpoints.source_plan): the one
precedence model_source loads by and the pre-run checks name, decided from marker files
alone, without TensorFlow."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from albert_tf.checkpoints.source_plan import HANDLE, INIT_CHECKPOINT, ModelSourcePlan, plan_sources
from tests.training import processes


def directory(root, name: str, *files: str) -> str:
    """A directory holding empty `files` (the markers the kind rules look for)."""
    path = root / name
    for file in files:
        (path / file).parent.mkdir(parents=True, exist_ok=True)
        (path / file).write_bytes(b"")
    return str(path)


@pytest.fixture
def sources(tmp_path) -> SimpleNamespace:
    return SimpleNamespace(
        hf=directory(tmp_path, "hf", "config.json", "model.safetensors", "spiece.model"),
        hf_no_spm=directory(tmp_path, "hf_no_spm", "config.json", "model.safetensors"),
        preset=directory(tmp_path, "preset", "config.json", "model.weights.h5",
                         "assets/tokenizer/vocabulary.spm"),
        module=directory(tmp_path, "module", "tfhub_module.pb", "saved_model.pb"))


def test_config_precedence_handle_then_checkpoint_then_file(sources):
    plan = ModelSourcePlan(albert_config_file="c.json", albert_hub_module_handle="exports/enc",
                           init_checkpoint=sources.hf)
    assert plan.config_from == HANDLE
    assert plan.config_source == "the config of --albert_hub_module_handle=exports/enc"
    plan = ModelSourcePlan(albert_config_file="c.json", init_checkpoint=sources.hf)
    assert (plan.config_from, plan.checkpoint_kind) == (INIT_CHECKPOINT, "hf")
    assert plan.config_source == "--albert_config_file=c.json"  # checked to agree: named
    assert (ModelSourcePlan(init_checkpoint=sources.module).config_source
            == f"the albert_config.json of --init_checkpoint={sources.module}")
    assert (ModelSourcePlan(init_checkpoint=sources.preset).config_source
            == f"the config.json of --init_checkpoint={sources.preset}")
    plan = ModelSourcePlan(albert_config_file="c.json", init_checkpoint="model.ckpt-100")
    assert (plan.config_from, plan.checkpoint_kind) == ("albert_config_file", None)
    assert ModelSourcePlan(init_checkpoint="model.ckpt-100").config_from is None


def test_tokenizer_precedence_flags_then_handle_then_checkpoint(sources):
    both = ModelSourcePlan(spm_model_file="m.model", vocab_file="v.txt",
                           albert_hub_module_handle="exports/enc")
    assert (both.tokenizer_from, both.tokenizer_source) == ("spm_model_file",
                                                            "--spm_model_file=m.model")
    plan = ModelSourcePlan(albert_hub_module_handle="exports/enc", init_checkpoint=sources.module)
    assert plan.tokenizer_from == HANDLE
    plan = ModelSourcePlan(init_checkpoint=sources.hf)
    assert plan.tokenizer_from == INIT_CHECKPOINT
    assert plan.carried_spm_model.endswith("hf/spiece.model")
    assert plan.tokenizer_source == f"the spiece.model of --init_checkpoint={sources.hf}"
    plan = ModelSourcePlan(init_checkpoint=sources.preset)
    assert plan.carried_spm_model.endswith("assets/tokenizer/vocabulary.spm")
    assert plan.tokenizer_source == f"the vocabulary.spm of --init_checkpoint={sources.preset}"
    plan = ModelSourcePlan(init_checkpoint=sources.module)
    assert (plan.tokenizer_from, plan.carried_spm_model) == (INIT_CHECKPOINT, None)
    assert plan.tokenizer_source == f"the SentencePiece model of --init_checkpoint={sources.module}"
    assert ModelSourcePlan(init_checkpoint=sources.hf_no_spm).tokenizer_from is None
    assert ModelSourcePlan(vocab_file="v.txt", init_checkpoint=sources.hf).tokenizer_from == (
        "vocab_file")


def test_options_without_a_flag_leave_it_unset_and_a_plan_is_its_own():
    plan = plan_sources(SimpleNamespace(albert_config_file="c.json", init_checkpoint=None))
    assert plan == ModelSourcePlan(albert_config_file="c.json")
    assert plan_sources(plan) is plan


def test_the_plan_and_the_preflight_import_no_tensorflow():
    code = ("import sys, albert_tf.checkpoints.source_plan, albert_tf.finetuning.preflight; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=processes.REPO,
                            env=processes.python_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.split() == ["False", "False"], result.stderr
