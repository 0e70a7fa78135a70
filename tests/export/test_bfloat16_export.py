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

from albert_tf.export import tfhub
from tests.conftest import random_inputs, tiny_config
from tests.export.tiny_exports import shared_export

ENCODER_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
BF16_RELATIVE_TOLERANCE = 2.0 ** -5


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny checkpoint exported with `export_tfhub --dtype=bfloat16 --with_mlm` (its
    flags, in process: tiny_exports.EXPORTS["bf16"], shared with the serving matrix), and the
    float32 Keras model holding the same weights."""
    path, pretrainer = shared_export(tmp_path_factory, "bf16")
    return path, pretrainer, random_inputs(pretrainer.config, batch=3, seq=12)


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
