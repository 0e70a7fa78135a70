"""`albert_tf.data.pretraining_dataset`: static records (§6.2) and dynamic masking."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import DYNAMIC, MaskingOptions, pretraining_dataset
from albert_tf.data.generation import GenerationOptions, generate
from albert_tf.tokenization import FullTokenizer
from tests.text_assets import text_assets  # noqa: F401  (session fixture)

SEQ, PRED = 48, 8
CLS, SEP = 2, 3


@dataclasses.dataclass
class Records:
    static: list[str]
    dynamic: list[str]
    count: int


@pytest.fixture(scope="module")
def records(text_assets, tmp_path_factory) -> Records:  # noqa: F811
    directory = tmp_path_factory.mktemp("records")
    corpus = directory / "corpus.txt"
    with open(text_assets.corpus, encoding="utf-8") as f:
        corpus.write_text("".join(f.readlines()[:1500]), encoding="utf-8")
    tokenizer = FullTokenizer(spm_model_file=text_assets.spm_model)
    masking = MaskingOptions(vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id, cls_id=tokenizer.cls_id,
                             sep_id=tokenizer.sep_id, max_predictions_per_seq=PRED)
    options = GenerationOptions(max_seq_length=SEQ, dupe_factor=1, masking=masking)
    static = [str(directory / f"s{i}.tfrecord") for i in range(3)]
    dynamic = [str(directory / f"d{i}.tfrecord") for i in range(2)]
    quiet = lambda message: None  # noqa: E731
    result = generate(str(corpus), static, tokenizer, options, num_workers=1, log=quiet)
    generate(str(corpus), dynamic, tokenizer, dataclasses.replace(options, record_kind=DYNAMIC),
             num_workers=1, log=quiet)
    return Records(static, dynamic, result.instances)


def rows_of(dataset) -> list[dict]:
    """Every row of every batch, as NumPy (each batch converted once, then sliced)."""
    rows = []
    for batch in dataset:
        arrays = {k: v.numpy() for k, v in batch.items()}
        rows += [{k: a[i] for k, a in arrays.items()} for i in range(len(arrays["input_ids"]))]
    return rows


def original_ids(row: dict) -> tuple:
    ids = row["input_ids"].copy()
    real = row["masked_lm_weights"] > 0
    ids[row["masked_lm_positions"][real]] = row["masked_lm_ids"][real]
    return tuple(ids.tolist())


def test_static_training_batches(records):
    dataset = pretraining_dataset(records.static, 16, SEQ, PRED, seed=0)
    expected = {"input_ids": ([16, SEQ], tf.int32), "input_mask": ([16, SEQ], tf.int32),
                "segment_ids": ([16, SEQ], tf.int32), "masked_lm_positions": ([16, PRED], tf.int32),
                "masked_lm_ids": ([16, PRED], tf.int32), "masked_lm_weights": ([16, PRED], tf.float32),
                "next_sentence_labels": ([16, 1], tf.int32)}
    assert {k: (v.shape.as_list(), v.dtype) for k, v in dataset.element_spec.items()} == expected
    # Repeats: more batches than one pass holds.
    assert sum(1 for _ in dataset.take(records.count // 16 + 3)) == records.count // 16 + 3


def test_static_eval_is_one_ordered_pass(records):
    full = rows_of(pretraining_dataset(",".join(records.static), 7, SEQ, PRED, is_training=False,
                                       drop_remainder=False))
    assert len(full) == records.count
    dropped = rows_of(pretraining_dataset(records.static, 7, SEQ, PRED, is_training=False))
    assert len(dropped) == records.count // 7 * 7
    assert all(np.array_equal(a["input_ids"], b["input_ids"]) for a, b in zip(full, dropped))


def test_seeded_shuffling_is_reproducible(records):
    def first(seed):
        return next(iter(pretraining_dataset(records.static, 8, SEQ, PRED, seed=seed)))["input_ids"].numpy()
    assert np.array_equal(first(3), first(3))
    assert not np.array_equal(first(3), first(4))


@pytest.mark.parametrize("files", ["three files: file sharding", "one file: record sharding"])
def test_sharding_per_input_context(records, files):
    patterns = records.static if files.startswith("three") else records.static[:1]
    everything = rows_of(pretraining_dataset(patterns, 64, SEQ, PRED, is_training=False,
                                             drop_remainder=False))
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=2)
        dataset = pretraining_dataset(patterns, 8, SEQ, PRED, is_training=False, input_context=context,
                                      drop_remainder=False)
        assert dataset.element_spec["input_ids"].shape.as_list() == [None, SEQ]
        batches = list(dataset)
        assert max(b["input_ids"].shape[0] for b in batches) == 4  # per-replica batch: 8 / 2
        seen.append({tuple(r["input_ids"].tolist()) for r in rows_of(batches)})
    assert not seen[0] & seen[1]
    assert seen[0] | seen[1] == {tuple(r["input_ids"].tolist()) for r in everything}


def test_missing_pattern_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        pretraining_dataset(str(tmp_path / "none-*.tfrecord"), 8, SEQ, PRED)


def test_dynamic_masking_new_masks_each_epoch(records):
    tokenizer_free = pretraining_dataset(records.dynamic, 4, SEQ, PRED, dynamic_masking=True, seed=1)
    per_epoch = 2 * (records.count // 4)
    masks: dict[tuple, list] = {}
    for row in rows_of(tokenizer_free.take(per_epoch)):
        length = int(row["input_mask"].sum())
        real = row["masked_lm_weights"] > 0
        positions = row["masked_lm_positions"][real]
        first_sep = int((row["segment_ids"][:length] == 0).sum()) - 1
        assert real.sum() >= 1 and np.all(positions < length)
        assert not np.isin(positions, [0, first_sep, length - 1]).any()
        assert np.all(row["masked_lm_positions"][~real] == 0) and np.all(row["masked_lm_ids"][~real] == 0)
        masks.setdefault(original_ids(row), []).append(tuple(positions.tolist()))
    # Unmasking recovers exactly the stored (unmasked) records.
    stored = rows_of(pretraining_dataset(records.dynamic, 64, SEQ, PRED, is_training=False,
                                         drop_remainder=False, dynamic_masking=True, seed=0))
    assert set(masks) <= {original_ids(r) for r in stored}
    repeated = [m for m in masks.values() if len(m) >= 2]
    assert len(repeated) > 20
    assert np.mean([m[0] != m[1] for m in repeated]) > 0.8


def test_dynamic_masking_is_reproducible_for_a_seed(records):
    def first(seed):
        batch = next(iter(pretraining_dataset(records.dynamic, 8, SEQ, PRED, dynamic_masking=True, seed=seed)))
        return batch["masked_lm_positions"].numpy()
    assert np.array_equal(first(5), first(5))


def test_record_kind_mismatch(records):
    with pytest.raises(ValueError, match="dynamic_masking_records"):
        pretraining_dataset(records.static, 8, SEQ, PRED, dynamic_masking=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="masked_lm"):
        next(iter(pretraining_dataset(records.dynamic, 8, SEQ, PRED)))


def test_explicit_masking_options(records):
    options = {"vocab_size": 1000, "max_predictions_per_seq": 99, "masked_lm_prob": 0.5}
    batch = next(iter(pretraining_dataset(records.dynamic, 8, SEQ, PRED, dynamic_masking=True,
                                          masking_options=options, seed=0)))
    # max_predictions_per_seq follows the function argument; the higher probability fills it.
    assert batch["masked_lm_positions"].shape == (8, PRED)
    assert batch["masked_lm_weights"].numpy().sum(1).min() >= min(PRED, 5)
