"""Serialises `tf.train.Example` protos from numpy arrays without TensorFlow.

Why: create_pretraining_data's workers would otherwise import TensorFlow (seconds per process)
and build protos field by field. The wire format is small and fixed:

  Example  { 1: Features }
  Features { 1: repeated MapEntry{ 1: key (string), 2: Feature } }
  Feature  { 2: FloatList{ 1: packed float } | 3: Int64List{ 1: packed varint } }

Any protobuf parser reads the result (tests parse it with tf.io.parse_single_example using
the original's feature spec and with tf.train.Example.FromString).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np


def varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return bytes([(field << 3) | 2]) + varint(len(payload)) + payload


def packed_varints(values: np.ndarray) -> list[bytes]:
    """Varint encoding of each row of a non-negative int matrix [B, L], one bytes per row."""
    values = np.asarray(values)
    if values.size and int(values.min()) < 0:
        raise ValueError("int64 features must be non-negative here")
    values = values.astype(np.uint64)
    largest = int(values.max()) if values.size else 0
    if largest < 0x80:  # every varint is a single byte: the value itself
        return [row.tobytes() for row in values.astype(np.uint8)]
    num_bytes = -(-largest.bit_length() // 7)
    shifts = np.uint64(7) * np.arange(num_bytes, dtype=np.uint64)
    groups = ((values[..., None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    used = np.ones(values.shape, np.int64)  # bytes per value
    for i in range(1, num_bytes):
        used += values >= np.uint64(1 << (7 * i))
    index = np.arange(num_bytes)
    groups |= np.where(index < (used[..., None] - 1), 0x80, 0).astype(np.uint8)  # continuation bits
    blob = groups[index < used[..., None]].tobytes()
    ends = np.cumsum(used.sum(axis=1)).tolist()
    return [blob[s:e] for s, e in zip([0] + ends[:-1], ends)]


class _EntryWrapper:
    """Wraps a packed payload into a Features map entry; prefixes are cached per payload length
    (all rows of a fixed-width feature share one)."""

    def __init__(self, name: str, field: int):
        self._key = _length_delimited(1, name.encode("utf-8"))
        self._field = field
        self._prefixes: dict[int, bytes] = {}

    def __call__(self, payload: bytes) -> bytes:
        prefix = self._prefixes.get(len(payload))
        if prefix is None:
            value_list = _length_delimited(1, payload) if payload else b""
            feature = _length_delimited(self._field, value_list)
            entry = _length_delimited(1, self._key + _length_delimited(2, feature))
            prefix = self._prefixes[len(payload)] = entry[:len(entry) - len(payload)]
        return prefix + payload


def encode_examples(features: Mapping[str, tuple[str, np.ndarray]]) -> list[bytes]:
    """Serialised Examples, one per row.

    Args:
      features: name → ("int64" | "float", array [B, L]), in the order to write them.
    Returns:
      B serialised `tf.train.Example` messages.
    """
    columns: list[list[bytes]] = []
    batch = None
    for name, (dtype, array) in features.items():
        array = np.asarray(array)
        batch = array.shape[0] if batch is None else batch
        if array.shape[0] != batch:
            raise ValueError(f"feature {name!r} has {array.shape[0]} rows, expected {batch}")
        if dtype == "int64":
            payloads, field = packed_varints(array), 3
        elif dtype == "float":
            payloads, field = [row.tobytes() for row in array.astype("<f4")], 2
        else:
            raise ValueError(f"feature {name!r}: dtype must be 'int64' or 'float', got {dtype!r}")
        columns.append(list(map(_EntryWrapper(name, field), payloads)))
    examples = []
    for entries in zip(*columns):
        body = b"".join(entries)
        examples.append(b"\x0a" + varint(len(body)) + body)
    return examples


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes):
    """(field number, payload) of each length-delimited field of a message."""
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        if tag & 7 != 2:
            raise ValueError(f"unexpected wire type {tag & 7}")
        size, pos = _read_varint(data, pos)
        yield tag >> 3, data[pos:pos + size]
        pos += size


def decode_example(serialized: bytes) -> dict[str, list]:
    """Feature name → values of a serialised Example with packed int64/float lists (for logs)."""
    out: dict[str, list] = {}
    for _, features in _fields(serialized):
        for _, entry in _fields(features):
            parts = dict(_fields(entry))
            name = parts[1].decode("utf-8")
            (kind, value_list), = list(_fields(parts.get(2, b""))) or [(3, b"")]
            packed = b"".join(p for _, p in _fields(value_list))
            if kind == 2:
                out[name] = np.frombuffer(packed, "<f4").tolist()
            else:
                values, pos = [], 0
                while pos < len(packed):
                    value, pos = _read_varint(packed, pos)
                    values.append(value)
                out[name] = values
    return out
