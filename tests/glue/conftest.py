"""Fixtures of the GLUE tests: the official-layout fixture tree, a hand-made WordPiece vocab,
the shared SentencePiece assets and a tiny model config (H=32, 2 layers)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "glue")

# A WordPiece vocabulary whose ids the tests compute by hand.
WORDPIECE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
                   "dog", "ran", "##s", "away", "."]


@pytest.fixture(scope="session")
def glue_dir() -> str:
    return FIXTURES


@pytest.fixture(scope="session")
def wordpiece_vocab(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    path.write_text("\n".join(WORDPIECE_VOCAB) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def tiny_config_file(tmp_path_factory) -> str:
    """albert_config.json: H=32, 2 layers, E=16, the 1000-piece SentencePiece vocabulary."""
    path = tmp_path_factory.mktemp("glue_config") / "albert_config.json"
    tiny_config(vocab_size=1000, max_position_embeddings=64).to_json_file(path)
    return str(path)
