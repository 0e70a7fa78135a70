"""Original TF1 checkpoints: round trips, strict-loader messages, kind detection."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import checkpoints as ck
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def built(model_cls, config):
    model = model_cls(config)
    inputs = random_inputs(config)
    model(inputs if model_cls is AlbertPretrainer else {k: inputs[k] for k in ENCODER_KEYS})
    return model, inputs


def read_all(path):
    reader = tf.train.load_checkpoint(path)
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_round_trip_gives_identical_outputs(tmp_path, sharing):
    config = tiny_config(num_hidden_layers=3, num_hidden_groups=2, inner_group_num=2,
                         cross_layer_sharing=sharing)
    source, inputs = built(AlbertPretrainer, config)
    path = ck.save_original_checkpoint(source, str(tmp_path / "model.ckpt"), global_step=42)
    target, _ = built(AlbertPretrainer, config)
    report = ck.load_original_checkpoint(target, path)
    assert len(report.restored) == len(target.weights) and not report.missing
    a, b = source(inputs), target(inputs)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert read_all(path)["global_step"] == 42


def test_written_names_and_shapes_are_the_originals(tmp_path):
    config = tiny_config(num_hidden_layers=5, num_hidden_groups=2, intermediate_size=48)
    model, _ = built(AlbertPretrainer, config)
    names = read_all(ck.save_original_checkpoint(model, str(tmp_path / "m.ckpt")))
    T = "bert/encoder/transformer/group_1/inner_group_0/"
    assert names[T + "attention_1/self/query/kernel"].shape == (32, 32)
    assert names[T + "ffn_1/intermediate/output/dense/kernel"].shape == (48, 32)
    assert names[T + "LayerNorm_1/gamma"].shape == (32,)
    assert names["bert/encoder/embedding_hidden_mapping_in/kernel"].shape == (16, 32)
    assert names["cls/seq_relationship/output_weights"].shape == (2, 32)
    assert names["cls/predictions/output_bias"].shape == (100,)
    assert not [n for n in names if "group_2" in n or "LayerNorm_2" in n or "decoder" in n]
    # E = H: the projection does not exist.
    square, _ = built(AlbertEncoder, tiny_config(embedding_size=32))
    assert not [n for n in read_all(ck.save_original_checkpoint(square, str(tmp_path / "s.ckpt")))
                if "embedding_hidden_mapping_in" in n]


def test_pretraining_checkpoint_loads_into_an_encoder_and_skips_optimizer_slots(tmp_path):
    config = tiny_config()
    pretrainer, inputs = built(AlbertPretrainer, config)
    values = {n: v.numpy() for n, v in ck.variable_map(pretrainer).items()}
    slots = {f"{n}/adam_{s}": np.zeros_like(v) for n, v in values.items() for s in "mv"}
    ck.write_name_based_checkpoint({**values, **slots, "global_step": np.int64(9)},
                                   str(tmp_path / "model.ckpt-9"))
    encoder, _ = built(AlbertEncoder, config)
    report = ck.load_original_checkpoint(encoder, str(tmp_path))  # a directory works too
    assert report.path.endswith("model.ckpt-9")
    assert len(report.restored) == len(encoder.weights)
    assert len(report.skipped) == 2 * len(values) + 1
    assert set(report.unused) == {n for n in values if n.startswith("cls/")}
    feed = {k: inputs[k] for k in ENCODER_KEYS}
    np.testing.assert_array_equal(encoder(feed)["pooled_output"],
                                  pretrainer.encoder(feed)["pooled_output"])


def test_another_size_names_every_mismatch(tmp_path):
    small, _ = built(AlbertEncoder, tiny_config())
    path = ck.save_original_checkpoint(small, str(tmp_path / "small.ckpt"))
    big, _ = built(AlbertEncoder, tiny_config(hidden_size=48, intermediate_size=96))
    with pytest.raises(ck.CheckpointMismatchError) as error:
        ck.load_original_checkpoint(big, path)
    message = str(error.value)
    assert "shape mismatches" in message
    assert "bert/pooler/dense/kernel: checkpoint [32, 32] vs model [48, 48]" in message
    assert "group_0/inner_group_0/ffn_1/intermediate/dense/kernel: checkpoint [32, 64] vs model [48, 96]" in message


def test_missing_head_is_refused_unless_allowed(tmp_path):
    config = tiny_config()
    encoder, inputs = built(AlbertEncoder, config)
    path = ck.save_original_checkpoint(encoder, str(tmp_path / "hub.ckpt"))
    pretrainer, _ = built(AlbertPretrainer, config)
    with pytest.raises(ck.CheckpointMismatchError) as error:
        ck.load_original_checkpoint(pretrainer, path)
    message = str(error.value)
    for name in ("cls/predictions/output_bias", "cls/seq_relationship/output_weights",
                 "cls/predictions/transform/LayerNorm/gamma"):
        assert name in message
    assert "allow_missing" in message
    report = ck.load_original_checkpoint(pretrainer, path, allow_missing=["mlm_head", "sop_head"])
    assert len(report.missing) == 7 and len(report.restored) == len(encoder.weights)


def test_renamed_variable_is_named_both_ways(tmp_path):
    config = tiny_config()
    encoder, _ = built(AlbertEncoder, config)
    values = {n: v.numpy() for n, v in ck.variable_map(encoder).items()}
    values["bert/embeddings/LayerNorm/scale"] = values.pop("bert/embeddings/LayerNorm/gamma")
    path = ck.write_name_based_checkpoint(values, str(tmp_path / "renamed.ckpt"))
    fresh, _ = built(AlbertEncoder, config)
    before = fresh.embedding_layer.word_embeddings.numpy().copy()
    with pytest.raises(ck.CheckpointMismatchError) as error:
        ck.load_original_checkpoint(fresh, path)
    message = str(error.value)
    assert "missing from the checkpoint (1): bert/embeddings/LayerNorm/gamma" in message
    assert "no place for (1): bert/embeddings/LayerNorm/scale" in message
    # Refused loads change nothing.
    np.testing.assert_array_equal(fresh.embedding_layer.word_embeddings.numpy(), before)


def test_checkpoint_kind(tmp_path):
    encoder, _ = built(AlbertEncoder, tiny_config())
    original = ck.save_original_checkpoint(encoder, str(tmp_path / "orig" / "model.ckpt"))
    ours = tf.train.Checkpoint(model=encoder).write(str(tmp_path / "tf2" / "ckpt"))
    assert ck.is_original_checkpoint(original) and ck.checkpoint_kind(str(tmp_path / "orig")) == "original"
    assert ck.checkpoint_kind(ours) == "ours" and not ck.is_original_checkpoint(ours)
    with pytest.raises(ck.CheckpointMismatchError, match="TF2 object-based"):
        ck.load_original_checkpoint(encoder, ours)
    with pytest.raises(FileNotFoundError, match="no checkpoint here"):
        ck.checkpoint_kind(str(tmp_path / "nothing"))
