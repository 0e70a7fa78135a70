"""The two RACE directory layouts, read as (location, parsed JSON) per article (faithfulness §10.2).

A level directory (`<data_dir>/RACE/<split>/<level>/`) holds either the original's
`all.txt` — one article JSON object per line — or the official distribution's files — one
article JSON object per `*.txt` file, read in natural name order (2.txt before 10.txt).
When `all.txt` is present it is the only file read. Paths with a scheme (`gs://`) go through
tf.io.gfile. A file that is not UTF-8 or not JSON raises `RaceDataError` naming the file
(and the line of `all.txt`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Iterator

from absl import logging

from albert_tf.runtime import paths

ORIGINAL_FILE = "all.txt"


class RaceDataError(ValueError):
    """Bad RACE input; the message names the file (and line) and what was expected."""


def _is_remote(path: str) -> bool:
    return "://" in path


def is_dir(path: str) -> bool:
    """Whether `path` is a directory (local or tf.io.gfile)."""
    return paths.isdir(path)


def _listdir(path: str) -> list[str]:
    return paths.listdir(path)


def _read_bytes(path: str) -> bytes:
    return paths.read_bytes(path)


def _natural_key(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RaceDataError(f"{where}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RaceDataError(f"{where}: not valid JSON ({e.msg} at line {e.lineno} column "
                            f"{e.colno})") from None


def article_files(level_dir: str) -> list[str]:
    """The files to read in a level directory: `all.txt` alone, else every `*.txt`."""
    names = [n for n in _listdir(level_dir) if n.endswith(".txt")]
    if ORIGINAL_FILE in names:
        others = len(names) - 1
        if others:
            logging.info("%s: reading %s only (%d other *.txt files ignored)", level_dir,
                         ORIGINAL_FILE, others)
        return [os.path.join(level_dir, ORIGINAL_FILE)]
    return [os.path.join(level_dir, n) for n in sorted(names, key=_natural_key)]


def iter_articles(path: str, hasher: "hashlib._Hash | None" = None
                  ) -> Iterator[tuple[str, Any]]:
    """(location, parsed JSON) of each article in a file: one per line of `all.txt`, the
    whole file otherwise. The location names the file (and the line)."""
    data = _read_bytes(path)
    if hasher is not None:
        hasher.update(path.encode("utf-8") + b"\0" + data)
    text = _decode(data, path)
    if os.path.basename(path) == ORIGINAL_FILE:
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                where = f"{path}: line {number}"
                yield where, _parse_json(line, where)
    else:
        yield path, _parse_json(text, path)
