"""The benchmarks' analytic FLOP count (benchmarks/albert_peers.py) against the model itself:
its matmul part must be 2 × the multiply-adds of the kernels the built encoder applies per
token, plus attention's Q·Kᵀ and P·V, whatever the sharing or grouping."""

import sys
from pathlib import Path

import numpy as np
import pytest

from albert_tf.models import AlbertEncoder
from tests.conftest import tiny_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from albert_peers import albert_flops


@pytest.mark.parametrize("overrides", [{}, dict(num_hidden_groups=2), dict(inner_group_num=2),
                                       dict(embedding_size=32)])
def test_encoder_flops_are_twice_the_kernels_multiply_adds(overrides):
    config = tiny_config(**overrides)
    batch, seq = 3, 8
    encoder = AlbertEncoder(config)
    encoder({"input_word_ids": np.zeros((1, 4), np.int32), "input_mask": np.ones((1, 4), np.int32),
             "input_type_ids": np.zeros((1, 4), np.int32)})
    kernels = {w.path: int(np.prod(w.shape)) for w in encoder.weights if w.path.endswith("kernel")}
    block = sum(size for path, size in kernels.items() if "transformer" in path)
    groups = config.num_hidden_groups
    # Each group's block runs L / G times; each kernel size (in × out) is the MACs per token.
    per_token = block / groups * config.num_hidden_layers
    projection = sum(size for path, size in kernels.items() if "projection" in path)
    pooler = sum(size for path, size in kernels.items() if "pooler" in path)
    tokens = batch * seq
    flops = albert_flops(config, batch, seq, masked=2)
    expected = 2 * tokens * (per_token + projection) + 2 * batch * pooler
    expected += (config.num_hidden_layers * config.inner_group_num) * 2 * 2 * tokens * seq * \
        config.hidden_size  # Q·Kᵀ and P·V
    assert flops["encoder_forward"] == expected
    assert flops["train_step"] == 3 * flops["pretrainer_forward"]
