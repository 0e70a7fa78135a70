"""Session fixtures: the built-in corpus and a ~1000-piece SentencePiece model, built once.

Import the fixtures into a test module (`from tests.text_assets import text_assets  # noqa: F401`).
Files are cached in one directory of the pytest run, shared by pytest-xdist's worker processes
under a file lock, so the corpus + model are built once per run (~7-11 s on 2 cores).
"""

from __future__ import annotations

import dataclasses

import pytest

from albert_tf.corpus import tiny_assets
from tests.run_once import run_once


@dataclasses.dataclass(frozen=True)
class TextAssets:
    corpus: str  # the full built-in corpus (one sentence per line, blank line between documents)
    spm_model: str  # SentencePiece model trained on it with the original's options, 1000 pieces


@pytest.fixture(scope="session")
def text_assets(tmp_path_factory: pytest.TempPathFactory) -> TextAssets:
    corpus, model = run_once(tmp_path_factory, "albert_text_assets",
                             lambda directory: tiny_assets(str(directory), vocab_size=1000))
    return TextAssets(corpus, model)


def swapped_pieces_model(source: str, target: str, pieces: tuple[str, str] = ("▁the", "▁of")
                         ) -> str:
    """Writes to `target` the SentencePiece model `source` with two pieces' ids swapped: another
    model (common words get other ids) that can be saved under the same file name."""
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    with open(source, "rb") as f:
        model.ParseFromString(f.read())
    first, second = (next(p for p in model.pieces if p.piece == name) for name in pieces)
    first.piece, second.piece = second.piece, first.piece
    with open(target, "wb") as f:
        f.write(model.SerializeToString())
    return target
