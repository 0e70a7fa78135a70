"""benchmarks/ort_static_int8.py (issue 42): ONNX Runtime's static QDQ int8 of our ONNX graph of
a tiny encoder, calibrated on a few text-like sequences, holds QuantizeLinear/DequantizeLinear
nodes and stays within an int8 bound of the Keras float32 encoder's pooled output, at the
calibration lengths and past them (the graph's batch and sequence dims are dynamic)."""

import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from albert_tf.models import AlbertEncoder
from tests.conftest import tiny_config

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from int8_serving import batched, text_like
from ort_static_int8 import count_qdq, ort_runner, qdq_int8

# Mean max |int8 − float32| pooled error as a fraction of the pooled outputs' mean max magnitude:
# 1.2–2.5 % measured over 8 seeds (7-bit weights); full-range u8×s8 weights, which saturate on x86
# CPUs without VNNI, gave ~30 %.
RELATIVE_BOUND = 0.08


def test_qdq_int8_file_holds_qdq_nodes_and_follows_keras(tmp_path):
    keras.utils.set_random_seed(0)
    config = tiny_config()
    encoder = AlbertEncoder(config)
    calibration = text_like(8, seed=0, vocab=config.vocab_size, low=8, high=32)
    path = qdq_int8(encoder, str(tmp_path / "encoder_qdq.onnx"), calibration)
    quantize, dequantize = count_qdq(path)
    # Every weight MatMul (4 attention + 2 feed-forward per shared layer, projection, pooler)
    # reads a DequantizeLinear'd int8 weight and a quantized activation.
    assert quantize >= 8 and dequantize >= 2 * 8, (quantize, dequantize)
    assert count_qdq(path + ".f32.onnx") == (0, 0)

    run = ort_runner(path, 1)
    for feeds in (text_like(6, seed=1, vocab=config.vocab_size, low=32, high=32),
                  [batched(text_like(4, seed=2, vocab=config.vocab_size, low=20, high=48),
                           batch=4, seq=48)]):
        want = [np.asarray(encoder(feed)["pooled_output"]) for feed in feeds]
        got = [run(feed) for feed in feeds]
        assert all(g.shape == w.shape for g, w in zip(got, want))
        error = np.mean([np.abs(g - w).max() for g, w in zip(got, want)])
        scale = np.mean([np.abs(w).max() for w in want])
        assert error <= RELATIVE_BOUND * scale, (error, scale)
        assert error > 0  # really quantized
