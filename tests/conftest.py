"""Shared fixtures: tiny configs so the whole suite runs in minutes on 2 CPU cores."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest

from albert_tf import AlbertConfig
from albert_tf.training import input_options
from tests.training.processes import RUNTIME_SITE

# The suite trains hundreds of times per process, and TF 2.21 can block up to 60 s when it
# frees an autotuned training iterator (albert_tf/training/input_options.py: 6–14 minutes of a
# full run went to these waits). In-process training here runs without tf.data's autotuner;
# the command-line tests (subprocesses) keep the default.
input_options.TRAINING_AUTOTUNE = False

# Subprocesses that inherit this environment start without the test-only scikit-learn, as a
# runtime install does (tests/runtime_site/sklearn; tests that set PYTHONPATH use
# tests/training/processes.RUNTIME_PYTHONPATH). This process keeps it (it is imported already).
os.environ["PYTHONPATH"] = os.pathsep.join(
    [RUNTIME_SITE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def tiny_config(**overrides) -> AlbertConfig:
    """H=32, 2 layers, vocab 100, E=16: the default test model."""
    values = dict(vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    values.update(overrides)
    return AlbertConfig(**values)


def random_inputs(config: AlbertConfig, batch: int = 3, seq: int = 12, num_masked: int = 4,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """Encoder + pretrainer inputs with some padding in every row but the first."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, (batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    for b in range(1, batch):
        mask[b, seq - 2 * b:] = 0
    types = np.zeros((batch, seq), "int32")
    types[:, seq // 2:] = 1
    positions = np.stack([rng.choice(seq - 2 * (batch - 1), num_masked, replace=False)
                          for _ in range(batch)]).astype("int32")
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types,
            "masked_lm_positions": positions}


@pytest.fixture
def config() -> AlbertConfig:
    return tiny_config()


def pytest_collection_modifyitems(items) -> None:
    """Marks the single tests of `tests/slow_tests.py` `slow` (the slow tier, `make test-all`;
    tests/test_tiers.py checks that every key names a test), and puts the longest files first
    (`tests/run_order.py`; a file's tests keep their order)."""
    from tests.run_order import file_rank
    from tests.slow_tests import SLOW_TESTS

    items.sort(key=lambda item: file_rank(item.nodeid))  # stable: the rest keep their order

    for item in items:
        if any(item.nodeid == key or item.nodeid.startswith(key + "[") for key in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
