"""Fixtures of the built-in corpus's demo-task tests."""

from tests.text_assets import text_assets  # noqa: F401  (session fixture: corpus + tiny SP model)
