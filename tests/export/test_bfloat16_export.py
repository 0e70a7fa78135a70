"""`export_tfhub --dtype=bfloat16`: an encoder whose matmuls run in bfloat16, with int32
inputs and float32 outputs, agreeing with the float32 export of the same weights.

Tolerance: bfloat16 keeps 8 significant bits, so each rounding of a matmul operand errs by
at most u = 2^-8 ≈ 0.39 % relative. Errors of a few such roundings add up through the two
layers' chain of matmuls (LayerNorm re-normalises after each sublayer), so we bound
max |bf16 − fp32| by 8u = 2^-5 ≈ 3.1 % of the output's largest magnitude — the bound the Keras
models already meet under mixed_bfloat16 (tests/models/test_all_models.py, 3e-2 × scale).
Measured on this tiny model: 0.86 % (pooled) and 0.63 % (sequence), ≈ 2u.
"""

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from albert_tf import checkpoints, export_tfhub
from albert_tf.export import tfhub
from albert_tf.models import AlbertPretrainer
from tests.conftest import random_inputs, tiny_config

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
BF16_RELATIVE_TOLERANCE = 2.0 ** -5


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny checkpoint exported with `export_tfhub --dtype=bfloat16 --with_mlm` (its
    flags, in process), and the float32 Keras model holding the same weights."""
    config = tiny_config(vocab_size=1000, initializer_range=0.1)
    pretrainer = AlbertPretrainer(config)
    root = tmp_path_factory.mktemp("bf16_export")
    checkpoint = checkpoints.save_original_checkpoint(pretrainer, str(root / "ckpt" / "model.ckpt"))
    config_file = str(root / "albert_config.json")
    config.to_json_file(config_file)
    path = str(root / "encoder")
    flag_values = flags.FLAGS
    # Each value through its flag's own parser; not FLAGS(argv), which would also validate the
    # required flags of any other script imported into this test process.
    for name, value in {"albert_config_file": config_file, "checkpoint": checkpoint,
                        "export_path": path, "with_mlm": "true", "dtype": "bfloat16"}.items():
        flag_values[name].parse(value)
    flag_values.mark_as_parsed()
    try:
        export_tfhub.main([])
    finally:
        flag_values.unparse_flags()
    return path, pretrainer, random_inputs(config, batch=3, seq=12)


def relative_error(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.abs(got - want).max() / np.abs(want).max())


def test_bf16_export_outputs_float32_close_to_the_float32_model(exported):
    path, pretrainer, inputs = exported
    feed = {k: tf.constant(inputs[k]) for k in ENCODER_KEYS}
    loaded = tf.saved_model.load(path)
    assert loaded.compute_dtype.numpy() == b"bfloat16"
    # Variables stay float32 (fine-tuning the export trains float32 weights).
    assert all(v.dtype == tf.float32 for v in loaded.trainable_variables)
    want = pretrainer.encoder({k: inputs[k] for k in ENCODER_KEYS})
    got = loaded(feed, training=False)
    for key in ("pooled_output", "sequence_output"):
        assert got[key].dtype == tf.float32, key
        error = relative_error(got[key], want[key])
        assert 0 < error < BF16_RELATIVE_TOLERANCE, (key, error)  # > 0: bf16 really ran
    assert got["default"].dtype == tf.float32
    assert all(x.dtype == tf.float32 for x in got["encoder_outputs"])
    positions = {"masked_lm_positions": tf.constant(inputs["masked_lm_positions"])}
    mlm = loaded.mlm({**feed, **positions})["mlm_logits"]
    assert mlm.dtype == tf.float32
    assert relative_error(mlm, pretrainer(inputs)["mlm_logits"]) < BF16_RELATIVE_TOLERANCE
    # The serving signature (what TF Serving and saved_model_cli run) too.
    served = loaded.signatures["serving_default"](**feed)
    assert served["pooled_output"].dtype == tf.float32
    np.testing.assert_allclose(served["pooled_output"], got["pooled_output"], atol=1e-6)


def test_export_dtype_is_a_checked_choice():
    with pytest.raises(flags.IllegalFlagValueError, match="float32|bfloat16"):
        flags.FLAGS["dtype"].parse("float16")
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16"):
        tfhub.export_encoder(tiny_config(), None, "unused", None, True, False, "float16")
