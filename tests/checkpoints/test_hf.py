"""The Hugging Face loader's strictness and file handling: one-line messages naming the file
and the tensors, refusals of what HF cannot hold, older file layouts, dry runs."""

import json
import os
import shutil

import numpy as np
import pytest

from albert_tf import checkpoints
from albert_tf.checkpoints.hf_config import config_from_hf
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertSpanLabeler
from tests.checkpoints.hf_models import build, hf_config, torch, transformers
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def built(model, config):
    model({k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS})
    return model


def one_line_error(call, error=checkpoints.CheckpointMismatchError) -> str:
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{name: directory} of small HF models saved by transformers."""
    root = tmp_path_factory.mktemp("hf")
    config = hf_config(tiny_config())
    out = {}
    for name, class_name, cfg in (
            ("classifier", "AlbertForSequenceClassification", config),
            ("qa", "AlbertForQuestionAnswering", config),
            ("tokens", "AlbertForTokenClassification", config),
            ("base", "AlbertModel", config),
            ("wide", "AlbertForSequenceClassification",
             hf_config(tiny_config(hidden_size=48, intermediate_size=96)))):
        model = build(class_name, cfg)
        model.save_pretrained(str(root / name))
        out[name] = (model, str(root / name))
    return out


def test_a_directory_of_another_size(saved):
    model = built(AlbertClassifier(tiny_config(), 3), tiny_config())
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(model, saved["wide"][1]))
    assert message.startswith(os.path.join(saved["wide"][1], "model.safetensors") + ":")
    assert "config.json field hidden_size: 48 vs 32" in message
    assert "albert.pooler.weight: checkpoint [48, 48] vs model [32, 32]" in message
    assert ("albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight: checkpoint "
            "[96, 48] vs model [64, 32]") in message


def test_a_head_that_does_not_match_the_model(saved):
    config = tiny_config()
    # HF's QA file has no pooler and no classifier.
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(
        built(AlbertClassifier(config, 2), config), saved["qa"][1]))
    assert "missing from the checkpoint (4): albert.pooler.weight, albert.pooler.bias, " \
           "classifier.weight, classifier.bias" in message
    # Two classes in the model, three in the file.
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(
        built(AlbertClassifier(config, 2), config), saved["classifier"][1]))
    assert "classifier.weight: checkpoint [3, 32] vs model [2, 32]" in message
    # A per-token classifier is no sequence classifier, whatever its tensors are called.
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(
        built(AlbertClassifier(config, 2), config), saved["tokens"][1]))
    assert "AlbertForTokenClassification's classifier.weight, classifier.bias is a per-token" in message
    report = checkpoints.load_hf_checkpoint(built(AlbertEncoder(config), config), saved["tokens"][1],
                                            allow_missing=["pooler"])
    assert report.unused == ["classifier.bias", "classifier.weight"]


def test_missing_config_and_corrupt_safetensors_name_the_file(saved, tmp_path):
    config = tiny_config()
    model = built(AlbertClassifier(config, 3), config)
    before = model.encoder.pooler.dense.kernel.numpy().copy()
    no_config = tmp_path / "no_config"
    shutil.copytree(saved["classifier"][1], no_config)
    os.remove(no_config / "config.json")
    assert checkpoints.checkpoint_kind(str(no_config)) == "hf"
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(model, str(no_config)),
                             checkpoints.CheckpointFileError)
    assert message == f"{no_config}/config.json: not found (a Hugging Face model directory " \
                      "needs config.json)"
    corrupt = tmp_path / "corrupt"
    shutil.copytree(saved["classifier"][1], corrupt)
    data = (corrupt / "model.safetensors").read_bytes()
    (corrupt / "model.safetensors").write_bytes(data[: len(data) // 2])  # truncated
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(model, str(corrupt)),
                             checkpoints.CheckpointFileError)
    assert message.startswith(f"{corrupt}/model.safetensors: not a readable safetensors file")
    np.testing.assert_array_equal(model.encoder.pooler.dense.kernel.numpy(), before)


def test_validate_reads_names_and_shapes_only_and_refused_loads_change_nothing(saved):
    config = tiny_config()
    model = built(AlbertClassifier(config, 3), config)
    before = [w.numpy().copy() for w in model.weights]
    report = checkpoints.validate_checkpoint(model, saved["classifier"][1])
    assert report.kind == "hf" and len(report.restored) == len(model.weights)
    for weight, value in zip(model.weights, before):
        np.testing.assert_array_equal(weight.numpy(), value)
    with pytest.raises(checkpoints.CheckpointMismatchError):
        checkpoints.validate_checkpoint(built(AlbertClassifier(config, 2), config),
                                        saved["classifier"][1])


def test_squad_v2_and_unshared_models_are_refused_naming_why(saved, tmp_path):
    config = tiny_config()
    v2 = AlbertSpanLabeler(config, version_2_with_negative=True)
    v2({**{k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS},
        "p_mask": np.zeros((3, 12), "int32"), "start_positions": None})
    message = one_line_error(lambda: checkpoints.load_hf_checkpoint(v2, saved["qa"][1]))
    assert "has no Hugging Face equivalent" in message and "SQuAD v1 span head" in message
    message = one_line_error(lambda: checkpoints.save_hf_checkpoint(v2, str(tmp_path / "v2")))
    assert "SQuAD 2.0 head" in message
    # An HF encoder into a v2 model: the encoder loads when the head may stay fresh.
    report = checkpoints.load_hf_checkpoint(v2, saved["base"][1], allow_missing=["squad_v2_head"])
    assert len(report.missing) == 11 and all(n.startswith("squad_v2_head/") for n in report.missing)
    unshared = built(AlbertEncoder(tiny_config(cross_layer_sharing="attention")), config)
    message = one_line_error(lambda: checkpoints.save_hf_checkpoint(unshared, str(tmp_path / "x")))
    assert "cross_layer_sharing='attention' has no Hugging Face equivalent" in message
    assert not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "v2")


def test_bare_albert_model_both_ways(saved, tmp_path):
    hf_model, directory = saved["base"]
    config = config_from_hf(directory)
    encoder = built(AlbertEncoder(config), config)
    report = checkpoints.load_hf_checkpoint(encoder, directory)
    assert len(report.restored) == len(encoder.weights)
    inputs = {k: v for k, v in random_inputs(config).items() if k in ENCODER_KEYS}
    feed = {"input_ids": torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(inputs["input_type_ids"], dtype=torch.long)}
    with torch.no_grad():
        want = hf_model(**feed).last_hidden_state.numpy()
    assert np.abs(encoder(inputs)["sequence_output"].numpy() - want).max() < 1e-5
    out = checkpoints.save_hf_checkpoint(encoder, str(tmp_path / "encoder"))
    reloaded, info = transformers.AlbertModel.from_pretrained(out, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    with open(os.path.join(out, "config.json")) as f:
        assert json.load(f)["architectures"] == ["AlbertModel"]


def test_older_files_pytorch_bin_tied_copies_and_bfloat16(saved, tmp_path):
    """pytorch_model.bin with the decoder copies and the position_ids buffer older
    transformers versions saved; a bfloat16 safetensors file."""
    from safetensors.torch import save_file

    hf_model = build("AlbertForPreTraining", hf_config(tiny_config()))
    state = hf_model.state_dict()  # has predictions.decoder.* (tied copies)
    state["albert.embeddings.position_ids"] = torch.arange(64)[None]
    old = tmp_path / "old"
    old.mkdir()
    hf_model.config.to_json_file(str(old / "config.json"))
    torch.save(state, str(old / "pytorch_model.bin"))
    from albert_tf.models import AlbertPretrainer

    config = config_from_hf(str(old))
    model = AlbertPretrainer(config)
    model(random_inputs(config))
    report = checkpoints.load_hf_checkpoint(model, str(old))
    assert set(report.skipped) == {"albert.embeddings.position_ids", "predictions.decoder.weight",
                                   "predictions.decoder.bias"}
    np.testing.assert_array_equal(model.encoder.embedding_layer.word_embeddings.numpy(),
                                  state["albert.embeddings.word_embeddings.weight"].numpy())
    # An untied decoder has no place in ALBERT.
    state["predictions.decoder.bias"] = state["predictions.bias"] + 1
    torch.save(state, str(old / "pytorch_model.bin"))
    assert "predictions.decoder.bias differs from predictions.bias" in one_line_error(
        lambda: checkpoints.load_hf_checkpoint(model, str(old)))
    # bfloat16 tensors widen exactly to float32.
    half = tmp_path / "bf16"
    half.mkdir()
    hf_model.config.to_json_file(str(half / "config.json"))
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in hf_model.state_dict().items()
               if not k.startswith("predictions.decoder")}, str(half / "model.safetensors"),
              metadata={"format": "pt"})
    checkpoints.load_hf_checkpoint(model, str(half))
    want = state["albert.pooler.weight"].to(torch.bfloat16).float().numpy().T
    np.testing.assert_array_equal(model.encoder.pooler.dense.kernel.numpy(), want)
