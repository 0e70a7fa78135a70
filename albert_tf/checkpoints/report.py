"""What a checkpoint load did (`LoadReport`), and the one strict comparison every format uses.

Every loader (original TF1, Hugging Face, ours) reduces its file to {name: shape} and the
model to {name: expected shape} in the file's naming and layout, then calls `compare`:
it names every model variable the file lacks, every file tensor nothing reads and every
shape mismatch, and refuses a partial load unless the caller allowed what is absent — a
fine-tune that silently starts from random weights is the failure to prevent.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any, Iterable, Mapping, Sequence


class CheckpointMismatchError(ValueError):
    """The checkpoint and the model disagree (missing, unused or mis-shaped variables)."""


class CheckpointFileError(CheckpointMismatchError):
    """A checkpoint file that cannot be read (corrupt, truncated, missing a part)."""


@dataclasses.dataclass
class LoadReport:
    """What a load did: names restored, model names left as initialised, names unused.

    Names are the file's own (TF1 names, HF parameter names, or our variable paths);
    `targets` maps every model name to its variable (for callers that count by part).
    """

    path: str
    restored: list[str]
    missing: list[str]
    unused: list[str]
    skipped: list[str]
    kind: str = "original"
    targets: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def summary(self) -> str:
        text = f"restored {len(self.restored)} variables from {self.path}"
        if self.missing:
            text += (f"; {len(self.missing)} left as initialised (allowed): "
                     f"{', '.join(self.missing)}")
        if self.unused:
            text += f"; {len(self.unused)} checkpoint variables unused: {', '.join(self.unused)}"
        return text


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when `name` matches one of the fnmatch globs (case-sensitive)."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def compare(path: str, model_name: str, expected: Mapping[str, Sequence[int]],
            found: Mapping[str, Sequence[int]], allow_missing: Sequence[str],
            allow_unused: Sequence[str], skipped: Sequence[str] = (),
            problems: Sequence[str] = (), kind: str = "original") -> LoadReport:
    """The strict match of model names (`expected` shapes) against a file's (`found`).

    Args:
      path: the file or prefix, for messages.
      model_name: the model's class name, for messages.
      expected / found: {name: shape} of the model (in the file's layout) and of the file.
      allow_missing / allow_unused: globs of model names the file may lack, and of file
        names nothing may read.
      skipped: file names that are never model weights (optimizer slots, step, buffers).
      problems: further disagreements found by the caller (e.g. config fields).
    Returns:
      the report (nothing assigned yet); `restored` lists the names to read.
    Raises:
      CheckpointMismatchError, one line naming every problem.
    """
    skipped_set = set(skipped)
    missing = [n for n in expected if n not in found]
    mismatched = [f"{n}: checkpoint {list(found[n])} vs model {list(expected[n])}"
                  for n in expected if n in found and list(found[n]) != list(expected[n])]
    unused = sorted(n for n in found if n not in expected and n not in skipped_set)
    bad_missing = [n for n in missing if not matches(n, allow_missing)]
    bad_unused = [n for n in unused if not matches(n, allow_unused)]
    if bad_missing or bad_unused or mismatched or problems:
        parts = [f"{path}: checkpoint does not match {model_name}"]
        parts += list(problems)
        if bad_missing:
            parts.append(f"model variables missing from the checkpoint ({len(bad_missing)}): "
                         + ", ".join(bad_missing))
        if bad_unused:
            parts.append(f"checkpoint variables the model has no place for ({len(bad_unused)}): "
                         + ", ".join(bad_unused))
        if mismatched:
            parts.append(f"shape mismatches ({len(mismatched)}): " + ", ".join(mismatched))
        if bad_missing:
            parts.append("pass allow_missing=[...] to load the rest anyway (e.g. a head the "
                         "checkpoint never had)")
        raise CheckpointMismatchError("; ".join(parts))
    restored = [n for n in expected if n in found]
    return LoadReport(path, restored, missing, unused, sorted(skipped_set), kind)
