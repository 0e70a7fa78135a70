"""Fine-tuning fixtures: the shared SentencePiece model and a tiny config for every task."""

from __future__ import annotations

import pytest

from tests.conftest import tiny_config
from tests.text_assets import text_assets  # noqa: F401  (session fixture: corpus + tiny SP model)


@pytest.fixture(scope="session")
def spm_model(text_assets) -> str:  # noqa: F811
    return text_assets.spm_model


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> str:
    """albert_config.json: H=32, 2 layers, the 1000-piece vocabulary, 128 positions."""
    path = tmp_path_factory.mktemp("config") / "albert_config.json"
    tiny_config(vocab_size=1000, max_position_embeddings=128).to_json_file(path)
    return str(path)
