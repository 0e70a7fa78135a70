"""SQuAD test fixtures: the JSON files of tests/fixtures/squad and the tiny SentencePiece model."""

from __future__ import annotations

import os

import pytest

from albert_tf.tokenization import FullTokenizer
from tests.text_assets import text_assets  # noqa: F401  (session fixture: corpus + tiny SP model)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "squad")


def fixture_path(name: str) -> str:
    """Path of a file in tests/fixtures/squad."""
    return os.path.join(FIXTURES, name)


@pytest.fixture(scope="session")
def spm_model(text_assets) -> str:  # noqa: F811
    return text_assets.spm_model


@pytest.fixture(scope="session")
def tokenizer(spm_model) -> FullTokenizer:
    return FullTokenizer(spm_model_file=spm_model)
