"""RACE test fixtures: the hand-written articles of tests/fixtures/race and the tiny SP model."""

from __future__ import annotations

import os
import shutil

import pytest

from albert_tf.tokenization import FullTokenizer
from tests.text_assets import text_assets  # noqa: F401  (session fixture: corpus + tiny SP model)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures", "race")


def fixture_dir() -> str:
    """The data_dir of the fixture articles (RACE/{train,dev,test}/{middle,high}/*.txt)."""
    return FIXTURES


def copy_fixtures(target) -> str:
    """A writable copy of the fixture data_dir (for tests that alter files)."""
    destination = os.path.join(str(target), "data")
    shutil.copytree(FIXTURES, destination)
    return destination


@pytest.fixture(scope="session")
def spm_model(text_assets) -> str:  # noqa: F811
    return text_assets.spm_model


@pytest.fixture(scope="session")
def tokenizer(spm_model) -> FullTokenizer:
    return FullTokenizer(spm_model_file=spm_model)
