"""Fixtures of the checkpoint tests: the shared corpus and tiny SentencePiece model (the HF
tokenizer files are made from a real model)."""

from tests.text_assets import text_assets  # noqa: F401  (session fixture: corpus + tiny SP model)
