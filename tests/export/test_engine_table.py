"""Adding an engine is one `Engine` row: a toy engine, defined here alone, is loaded, listed,
chosen and refused through every path of `load_serving` without touching any other module.

The toy "numpy" engine reads an `.npz` file holding an embedding table; its encoder returns
each token's row (masked) and the masked mean as the pooled output. The expected values are
computed here by plain Python loops, independently of the engine's vectorized numpy code.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from albert_tf.serving import engines
from albert_tf.serving.artifact import Artifact, ServingLoadError
from albert_tf.serving.auto_rule import AUTO_RULE, DEFAULT_PROFILE, preferences
from albert_tf.serving.manifest import Manifest, read_manifest, write_manifest
from albert_tf.serving.loader import auto_backend, load_serving
from albert_tf.runtime import hardware

VOCAB, HIDDEN = 7, 3
TOY_PROFILE = "toy-cpu"  # a CPU profile AUTO_RULE has no row for


def _load_npz(artifact: Artifact, file: str, precision: str, num_threads: int | None):
    del artifact, precision, num_threads
    table = np.load(file)["embeddings"]

    def run(inputs):
        mask = inputs["input_mask"][..., None].astype(np.float32)
        sequence = table[inputs["input_word_ids"]] * mask
        pooled = sequence.sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
        return {"sequence_output": sequence.astype(np.float32),
                "pooled_output": pooled.astype(np.float32)}

    return run


TOY = engines.Engine("numpy", None, "", ("fp32",), engines.listed_file("numpy"), _load_npz,
                     {"fp32": "a toy .npz file"}, suffixes=(".npz",))


@pytest.fixture
def toy(monkeypatch):
    """The toy row in the table for one test (the only registration there is)."""
    monkeypatch.setitem(engines.ENGINES, TOY.name, TOY)
    return TOY


@pytest.fixture
def table(tmp_path):
    embeddings = np.arange(VOCAB * HIDDEN, dtype=np.float32).reshape(VOCAB, HIDDEN) / 10
    np.savez(tmp_path / "toy.npz", embeddings=embeddings)
    return embeddings


def _inputs():
    ids = np.array([[1, 2, 6, 0], [5, 3, 0, 0]], np.int32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def _expected(embeddings, inputs):
    """The toy encoder's outputs by loops: each token's row where masked in, zeros elsewhere."""
    ids, mask = inputs["input_word_ids"].tolist(), inputs["input_mask"].tolist()
    sequence, pooled = [], []
    for row_ids, row_mask in zip(ids, mask):
        rows = [[float(embeddings[i][h]) * m for h in range(HIDDEN)]
                for i, m in zip(row_ids, row_mask)]
        sequence.append(rows)
        pooled.append([sum(r[h] for r in rows) / sum(row_mask) for h in range(HIDDEN)])
    return np.array(sequence), np.array(pooled)


def _export(tmp_path, entry):
    export = tmp_path / "export"
    export.mkdir()
    if os.path.exists(tmp_path / "toy.npz"):
        os.replace(tmp_path / "toy.npz", export / "toy.npz")
    write_manifest(str(export), Manifest(max_seq_length=4, vocab_size=VOCAB, type_vocab_size=2,
                                         extra={"numpy": entry}))
    return export


def test_a_bare_file_loads_on_the_toy_engine(toy, table, tmp_path):
    model = load_serving(str(tmp_path / "toy.npz"), backend="numpy")
    assert (model.backend, model.precision) == ("numpy", "fp32")
    out = model(_inputs())
    sequence, pooled = _expected(table, _inputs())
    np.testing.assert_allclose(out["sequence_output"], sequence, rtol=1e-6)
    np.testing.assert_allclose(out["pooled_output"], pooled, rtol=1e-6)


def test_the_manifest_lists_it_and_auto_chooses_it_on_a_profile_without_a_row(
        toy, table, tmp_path, monkeypatch):
    export = _export(tmp_path, {"file": "toy.npz"})
    assert read_manifest(str(export)).files() == {"numpy": "toy.npz"}
    assert TOY_PROFILE not in AUTO_RULE
    monkeypatch.setattr(hardware, "cpu_profile", lambda *args, **kwargs: TOY_PROFILE)
    # The profile without a row takes the stated default's, not a KeyError.
    assert preferences(TOY_PROFILE, "fp32", 1) == AUTO_RULE[DEFAULT_PROFILE]["fp32"][1]
    model = load_serving(str(export))
    assert (model.backend, model.precision) == ("numpy", "fp32")
    np.testing.assert_allclose(model(_inputs())["pooled_output"], _expected(table, _inputs())[1],
                               rtol=1e-6)
    with pytest.raises(ValueError, match=f"outside the allowed range \\[0, {VOCAB}\\)"):
        model({**_inputs(), "input_word_ids": np.full((1, 2), VOCAB, np.int32),
               "input_mask": np.ones((1, 2), np.int32),
               "input_type_ids": np.zeros((1, 2), np.int32)})


def test_the_fallback_order_is_read_from_the_rows(toy, table, tmp_path, monkeypatch):
    assert engines.fallback_order()[-1] == "numpy"  # the default rank: after every built-in
    first = dataclasses.replace(TOY, fallback=-1)
    monkeypatch.setitem(engines.ENGINES, "numpy", first)
    assert engines.fallback_order()[0] == "numpy"
    # On a profile whose cell does not list it, auto reaches it through the fallback.
    artifact = Artifact(str(tmp_path / "toy.npz"), suffixes=engines.engine_suffixes())
    assert "numpy" not in preferences(hardware.PROFILE_AVX2, "fp32", 8)
    assert auto_backend(artifact, batch_size=8, profile=hardware.PROFILE_AVX2) == ("numpy", "fp32")


def test_a_backend_outside_the_table_is_refused_naming_the_toy(toy):
    with pytest.raises(ServingLoadError, match="backend must be one of auto, .*numpy, got 'nope'"):
        load_serving("unused", backend="nope")


def test_refusals(toy, table, tmp_path, monkeypatch):
    # A file serving.json lists that is not there.
    export = _export(tmp_path, {"file": "gone.npz"})
    with pytest.raises(ServingLoadError, match="serving.json lists .*gone.npz, which is missing"):
        load_serving(str(export), backend="numpy")
    # A precision the row does not run.
    with pytest.raises(ServingLoadError, match="backend 'numpy' runs fp32, not 'int8'"):
        load_serving(str(export / "toy.npz"), backend="numpy", precision="int8")
    # An export without the engine's file: the row's `needs` line.
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.onnx").write_bytes(b"")
    write_manifest(str(other), Manifest(onnx={"file": "model.onnx"}))
    with pytest.raises(ServingLoadError, match="'numpy' at fp32 needs a toy .npz file, which"):
        load_serving(str(other), backend="numpy")
    # Its package missing: the install line, with the row's extra.
    monkeypatch.setitem(engines.ENGINES, "numpy",
                        dataclasses.replace(TOY, package="toy_engine_not_installed", extra="toy"))
    with pytest.raises(ServingLoadError, match=r"pip install 'albert-tf\[toy\]'"):
        load_serving(str(export / "toy.npz"), backend="numpy")
    # A bare file no row reads.
    (tmp_path / "toy.bin").write_bytes(b"")
    with pytest.raises(ServingLoadError, match="toy.bin: is not a serving artifact"):
        load_serving(str(tmp_path / "toy.bin"), backend="numpy")
