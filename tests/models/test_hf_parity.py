"""Parity with an independent implementation: HF transformers' PyTorch AlbertForPreTraining.

Weights go through our original-format writer, are read back by name with
tf.train.load_checkpoint and mapped into HF's state dict here, so the test also checks
that the TF1 names and layouts we write are the ones the original uses.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints
from albert_tf.models import AlbertPretrainer
from tests.conftest import random_inputs, tiny_config

torch = pytest.importorskip("torch", reason="PyTorch (requirements-dev.txt) is not installed")
transformers = pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) is not installed")

# TF1 name pattern → (HF name template, transpose?)
_T = r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/"
_H = "albert.encoder.albert_layer_groups.{0}.albert_layers.{1}."
TF1_TO_HF = [
    (r"bert/embeddings/(word|position|token_type)_embeddings", "albert.embeddings.{0}_embeddings.weight", False),
    (r"bert/embeddings/LayerNorm/gamma", "albert.embeddings.LayerNorm.weight", False),
    (r"bert/embeddings/LayerNorm/beta", "albert.embeddings.LayerNorm.bias", False),
    (r"bert/encoder/embedding_hidden_mapping_in/kernel", "albert.encoder.embedding_hidden_mapping_in.weight", True),
    (r"bert/encoder/embedding_hidden_mapping_in/bias", "albert.encoder.embedding_hidden_mapping_in.bias", False),
    (_T + r"attention_1/self/(query|key|value)/kernel", _H + "attention.{2}.weight", True),
    (_T + r"attention_1/self/(query|key|value)/bias", _H + "attention.{2}.bias", False),
    (_T + r"attention_1/output/dense/kernel", _H + "attention.dense.weight", True),
    (_T + r"attention_1/output/dense/bias", _H + "attention.dense.bias", False),
    (_T + r"LayerNorm/gamma", _H + "attention.LayerNorm.weight", False),
    (_T + r"LayerNorm/beta", _H + "attention.LayerNorm.bias", False),
    (_T + r"ffn_1/intermediate/dense/kernel", _H + "ffn.weight", True),
    (_T + r"ffn_1/intermediate/dense/bias", _H + "ffn.bias", False),
    (_T + r"ffn_1/intermediate/output/dense/kernel", _H + "ffn_output.weight", True),
    (_T + r"ffn_1/intermediate/output/dense/bias", _H + "ffn_output.bias", False),
    (_T + r"LayerNorm_1/gamma", _H + "full_layer_layer_norm.weight", False),
    (_T + r"LayerNorm_1/beta", _H + "full_layer_layer_norm.bias", False),
    (r"bert/pooler/dense/kernel", "albert.pooler.weight", True),
    (r"bert/pooler/dense/bias", "albert.pooler.bias", False),
    (r"cls/predictions/transform/dense/kernel", "predictions.dense.weight", True),
    (r"cls/predictions/transform/dense/bias", "predictions.dense.bias", False),
    (r"cls/predictions/transform/LayerNorm/gamma", "predictions.LayerNorm.weight", False),
    (r"cls/predictions/transform/LayerNorm/beta", "predictions.LayerNorm.bias", False),
    (r"cls/predictions/output_bias", "predictions.bias", False),
    (r"cls/seq_relationship/output_weights", "sop_classifier.classifier.weight", False),
    (r"cls/seq_relationship/output_bias", "sop_classifier.classifier.bias", False),
]


def hf_state_dict(checkpoint_path, config):
    reader = tf.train.load_checkpoint(checkpoint_path)
    state = {}
    for name in reader.get_variable_to_shape_map():
        if name == "global_step":
            continue
        for pattern, template, transpose in TF1_TO_HF:
            match = re.fullmatch(pattern, name)
            if match:
                value = reader.get_tensor(name)
                state[template.format(*match.groups())] = torch.tensor(value.T if transpose else value)
                break
        else:
            raise AssertionError(f"no HF place for {name}")
    # HF ties the decoder to the word table and keeps a copy of the output bias.
    state["predictions.decoder.weight"] = state["albert.embeddings.word_embeddings.weight"]
    state["predictions.decoder.bias"] = state["predictions.bias"]
    if config.embedding_size == config.hidden_size:  # HF always has the projection
        state["albert.encoder.embedding_hidden_mapping_in.weight"] = torch.eye(config.hidden_size)
        state["albert.encoder.embedding_hidden_mapping_in.bias"] = torch.zeros(config.hidden_size)
    return state


def randomize(model, seed=0):
    rng = np.random.default_rng(seed)
    for w in model.weights:
        base = 1.0 if "gamma" in w.path else 0.0
        w.assign(base + rng.normal(0, 0.1, w.shape).astype("float32"))


CONFIGS = {
    "tiny": dict(),
    "groups_inner_E_ne_H": dict(num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2),
    "E_eq_H": dict(embedding_size=32),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_outputs_match_hf_transformers(tmp_path, name):
    config = tiny_config(**CONFIGS[name])
    inputs = random_inputs(config, batch=3, seq=12)
    ours = AlbertPretrainer(config)
    ours(inputs)
    randomize(ours)
    path = checkpoints.save_original_checkpoint(ours, str(tmp_path / "model.ckpt"))

    hf_config = transformers.AlbertConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        num_hidden_groups=config.num_hidden_groups, inner_group_num=config.inner_group_num,
        num_attention_heads=config.num_attention_heads, intermediate_size=config.intermediate_size,
        hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0, max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, layer_norm_eps=1e-12)
    hf = transformers.AlbertForPreTraining(hf_config).eval()
    missing, unexpected = hf.load_state_dict(hf_state_dict(path, config), strict=False)
    assert not unexpected and not [m for m in missing if "position_ids" not in m], (missing, unexpected)

    feed = {k: torch.tensor(v, dtype=torch.long) for k, v in inputs.items()}
    with torch.no_grad():
        base = hf.albert(input_ids=feed["input_word_ids"], attention_mask=feed["input_mask"],
                         token_type_ids=feed["input_type_ids"])
        full = hf(input_ids=feed["input_word_ids"], attention_mask=feed["input_mask"],
                  token_type_ids=feed["input_type_ids"])
    encoder_out = ours.encoder({k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    out = ours(inputs)
    positions = inputs["masked_lm_positions"]
    hf_mlm = np.stack([full.prediction_logits[b].numpy()[positions[b]] for b in range(len(positions))])

    def close(a, b):
        return float(np.abs(np.asarray(a) - np.asarray(b)).max())

    assert close(encoder_out["sequence_output"], base.last_hidden_state) < 1e-5
    assert close(encoder_out["pooled_output"], base.pooler_output) < 1e-5
    assert close(out["mlm_logits"], hf_mlm) < 1e-5
    assert close(out["sop_logits"], full.sop_logits) < 1e-5
    # Padded rows matter: the check covers positions whose keys are partly masked.
    assert inputs["input_mask"].min() == 0
