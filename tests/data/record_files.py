"""Small hand-made pre-training record files for the record and value checks' tests."""

from __future__ import annotations

import json

import numpy as np

from albert_tf.data import features as F
from albert_tf.data.example_codec import encode_examples
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter

CLS, SEP = 2, 3


def rows(count: int, seq: int, pred: int, vocab: int = 100, seed: int = 0) -> dict[str, np.ndarray]:
    """Valid static features: `[CLS] a [SEP] b [SEP]` with ids in [5, vocab), padding,
    `pred` masked slots of which the first half are real."""
    rng = np.random.default_rng(seed)
    length = seq - 4
    ids = np.zeros((count, seq), np.int64)
    ids[:, 1:length - 1] = rng.integers(5, vocab, (count, length - 2))
    ids[:, 0], ids[:, length // 2], ids[:, length - 1] = CLS, SEP, SEP
    mask = (np.arange(seq) < length).astype(np.int64)[None].repeat(count, 0)
    segments = ((np.arange(seq) > length // 2) & (np.arange(seq) < length)).astype(np.int64)
    real = pred // 2
    positions = np.zeros((count, pred), np.int64)
    positions[:, :real] = np.arange(1, real + 1)
    weights = np.zeros((count, pred), np.float32)
    weights[:, :real] = 1.0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments[None].repeat(count, 0),
            "token_boundary": mask.copy(),
            "masked_lm_positions": positions,
            "masked_lm_ids": np.take_along_axis(ids, positions, axis=1) * (weights > 0),
            "masked_lm_weights": weights,
            "next_sentence_labels": rng.integers(0, 2, (count, 1))}


def write(path: str, features: dict[str, np.ndarray], kind: str = F.STATIC,
          summary: dict | None = None) -> str:
    """Writes the features in the original's layout (§5.8); `summary` → `<path>.json`."""
    seq = features["input_ids"].shape[1]
    pred = features["masked_lm_ids"].shape[1]
    layout = F.feature_layout(kind, seq, pred)
    columns = {name: (dtype, features[name]) for name, (dtype, _) in layout.items()}
    with AtomicTFRecordWriter(path) as writer:
        writer.write_many(encode_examples(columns))
    if summary is not None:
        with open(path + ".json", "w", encoding="utf-8") as f:
            json.dump(summary, f)
    return path


def summary_of(kind: str, seq: int, pred: int, vocab_size: int) -> dict:
    """The fields create_pretraining_data writes that the checks read."""
    return {"record_kind": kind, "max_seq_length": seq, "max_predictions_per_seq": pred,
            "prediction_slots": pred, "vocab_size": vocab_size}
