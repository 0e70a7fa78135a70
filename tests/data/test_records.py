"""Record bytes: CRC32C, TFRecord framing and Example encoding against TensorFlow's own
reader/parser, and the original's feature spec (§5.8, §6.2) in both directions."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import pretraining_dataset
from albert_tf.data.example_codec import decode_example, encode_examples, varint
from albert_tf.data.tfrecord_io import AtomicTFRecordWriter, crc32c, frame_records, read_records


def crc32c_bitwise(data: bytes) -> int:
    """Reference CRC32C, bit by bit (reflected polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def test_crc32c_known_vectors():
    # The CRC-32C check value and the RFC 3720 (iSCSI) B.4 vectors.
    records = [b"123456789", bytes(32), b"\xff" * 32, bytes(range(32)), b""]
    assert crc32c(records).tolist() == [0xE3069283, 0x8A9136AA, 0x62A8AB43, 0x46DD794E, 0]


def test_crc32c_matches_bitwise_reference():
    rng = np.random.default_rng(0)
    records = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in [1, 2, 7, 100, 1500, 3000]]
    assert crc32c(records).tolist() == [crc32c_bitwise(r) for r in records]


def test_framing_reads_back_in_tensorflow(tmp_path):
    rng = np.random.default_rng(1)
    records = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in [0, 5, 300, 2000]]
    path = str(tmp_path / "x.tfrecord")
    with AtomicTFRecordWriter(path) as writer:
        writer.write_many(records)
    assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == records
    assert len(frame_records(records)) == sum(len(r) + 16 for r in records)
    # ... and a file written by TensorFlow reads back with our reader.
    tf_path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(tf_path) as writer:
        for r in records:
            writer.write(r)
    assert list(read_records(tf_path)) == records


def test_atomic_writer_leaves_nothing_on_error(tmp_path):
    path = tmp_path / "out.tfrecord"
    with pytest.raises(RuntimeError):
        with AtomicTFRecordWriter(str(path)) as writer:
            writer.write_many([b"abc"])
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**31 - 1, 2**40])
def test_varint(value):
    assert tf.train.Int64List.FromString(b"\x0a" + varint(len(varint(value))) + varint(value)).value == [value]


def test_encode_examples_parse_in_tensorflow():
    ints = np.array([[0, 1, 127, 128], [16383, 16384, 2**31 - 1, 5]])
    floats = np.array([[1.0, 0.0], [0.5, -2.25]], np.float32)
    labels = np.array([[0], [1]])
    examples = encode_examples({"a": ("int64", ints), "b": ("float", floats), "c": ("int64", labels)})
    for row, serialized in enumerate(examples):
        parsed = tf.train.Example.FromString(serialized).features.feature
        assert list(parsed["a"].int64_list.value) == ints[row].tolist()
        assert list(parsed["b"].float_list.value) == floats[row].tolist()
        assert list(parsed["c"].int64_list.value) == labels[row].tolist()
        decoded = decode_example(serialized)
        assert decoded["a"] == ints[row].tolist() and decoded["b"] == floats[row].tolist()


def original_feature_spec(seq: int, predictions: int) -> dict:
    """The original trainer's parse spec, written out from §6.2 (token_boundary from §5.8)."""
    return {
        "input_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "token_boundary": tf.io.FixedLenFeature([seq], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([predictions], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([predictions], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def original_example(rng, seq: int, predictions: int) -> tuple[tf.train.Example, dict]:
    """An Example built field by field the way the original writer does (§5.8)."""
    length = int(rng.integers(8, seq + 1))
    ids = [2] + rng.integers(5, 1000, length - 3).tolist() + [3, 3] + [0] * (seq - length)
    count = int(rng.integers(1, predictions + 1))
    values = {
        "input_ids": ids,
        "input_mask": [1] * length + [0] * (seq - length),
        "segment_ids": [0] * (length // 2) + [1] * (length - length // 2) + [0] * (seq - length),
        "token_boundary": rng.integers(0, 2, seq).tolist(),
        "masked_lm_positions": sorted(rng.choice(np.arange(1, length - 2), count, replace=False).tolist())
        + [0] * (predictions - count),
        "masked_lm_ids": rng.integers(5, 1000, count).tolist() + [0] * (predictions - count),
        "masked_lm_weights": [1.0] * count + [0.0] * (predictions - count),
        "next_sentence_labels": [int(rng.integers(0, 2))],
    }
    feature = {k: tf.train.Feature(float_list=tf.train.FloatList(value=v)) if k == "masked_lm_weights"
               else tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in values.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature)), values


def test_original_format_records_feed_our_pipeline(tmp_path):
    """Files from the original tool work with pretraining_dataset (vice versa: see
    tests/test_create_pretraining_data.py::test_records_parse_with_the_original_spec)."""
    rng = np.random.default_rng(2)
    seq, predictions = 32, 5
    path = str(tmp_path / "original.tfrecord")
    expected = []
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(6):
            example, values = original_example(rng, seq, predictions)
            writer.write(example.SerializeToString())
            expected.append(values)
    batches = list(pretraining_dataset(path, 3, seq, predictions, is_training=False))
    assert len(batches) == 2
    rows = [{k: v[i] for k, v in batch.items()} for batch in batches for i in range(3)]
    for row, values in zip(rows, expected):
        assert set(row) == {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                            "masked_lm_weights", "next_sentence_labels"}
        for name, tensor in row.items():
            assert tensor.numpy().tolist() == values[name], name
            assert tensor.dtype == (tf.float32 if name == "masked_lm_weights" else tf.int32)
        # Our own encoder writes bytes the same parser accepts with identical values.
        ours = encode_examples({k: ("float" if k == "masked_lm_weights" else "int64", np.array([v]))
                                for k, v in values.items()})[0]
        parsed = tf.io.parse_single_example(ours, original_feature_spec(seq, predictions))
        assert {k: v.numpy().tolist() for k, v in parsed.items()} == values
