"""docs/faithfulness.md is the reference the code cites: every `§n.m` and quirk id cited in a
.py, .md or .sh file of the repository must be a heading there, and every module the document
names must exist. Citations look like `faithfulness §8.6`, `§9.5–9.6`, `§5.6.3` (step 3 of
§5.6) or `Q20`; `paper §3.1` cites the ALBERT paper and is not checked."""

from __future__ import annotations

import functools
import os
import re
from typing import Iterator, NamedTuple


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENT = os.path.join(REPO, "docs", "faithfulness.md")
SCANNED_SUFFIXES = (".py", ".md", ".sh")
SKIPPED_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "build", "dist"}

NUMBER = r"\d+(?:\.\d+)*"
# "§8.6", "§9.5–9.6", "§2.1–§2.2", "§5.6.5–6": an en dash or hyphen, no spaces, makes a range.
SECTION_CITATION = re.compile(rf"§({NUMBER})(?:[–-]§?({NUMBER}))?")
# "Q20", "Q2–Q5" as whole words (not "SQ20", "Q20a" or "Q2_x").
QUIRK_CITATION = re.compile(r"(?<![\w])Q(\d+)(?:[–-]Q(\d+))?(?![\w])")
SECTION_HEADING = re.compile(rf"^#{{1,6}}\s+§({NUMBER})", re.M)
QUIRK_HEADING = re.compile(r"^#{1,6}\s+Q(\d+)\b", re.M)
NOT_OURS = re.compile(r"\bpaper\s*$", re.I)  # "paper §3.1": the ALBERT paper's sections
# Citations of the specification that lives outside the repository.
OUTSIDE_SPEC = re.compile(r"\b[Ss]pec(?:'s)?\s+(?:§|Q\d)")
# Module paths the document names as implementing something.
MODULE_PATH = re.compile(r"`((?:albert_tf|tests|scripts|benchmarks)/[\w/]+\.(?:py|sh|md)|run_\w+\.py)`")


class Citation(NamedTuple):
    path: str
    line: int
    text: str  # as written
    key: str  # "§8.6" or "Q20"


def _section_range(first: str, last: str | None) -> list[str]:
    """'9.5', '9.6' → ['9.5', '9.6']; '5.3', '5.5' → 5.3, 5.4, 5.5; '5.6.5', '6' → 5.6.5, 5.6.6."""
    start = [int(p) for p in first.split(".")]
    if last is None:
        return [first]
    tail = [int(p) for p in last.split(".")]
    end = start[:len(start) - len(tail)] + tail if len(tail) < len(start) else tail
    if len(end) == len(start) and end[:-1] == start[:-1] and start[-1] <= end[-1]:
        return [".".join(map(str, start[:-1] + [n])) for n in range(start[-1], end[-1] + 1)]
    return [first, ".".join(map(str, end))]


def citations_in_text(text: str, path: str = "<text>") -> Iterator[Citation]:
    """Every section and quirk citation in `text`, ranges expanded."""
    for number, line in enumerate(text.splitlines(), start=1):
        for match in SECTION_CITATION.finditer(line):
            if NOT_OURS.search(line[:match.start()]):
                continue
            for section in _section_range(match.group(1), match.group(2)):
                yield Citation(path, number, match.group(0), f"§{section}")
        for match in QUIRK_CITATION.finditer(line):
            first = int(match.group(1))
            last = int(match.group(2)) if match.group(2) else first
            for quirk in range(first, max(first, last) + 1):
                yield Citation(path, number, match.group(0), f"Q{quirk}")


def scanned_files() -> Iterator[str]:
    for root, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SCANNED_SUFFIXES):
                yield os.path.join(root, name)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=1)
def document_headings() -> frozenset[str]:
    text = _read(DOCUMENT)
    return frozenset([f"§{s}" for s in SECTION_HEADING.findall(text)]
                     + [f"Q{int(q)}" for q in QUIRK_HEADING.findall(text)])


def resolves(key: str, headings: frozenset[str]) -> bool:
    """A heading of its own, or for a step like §5.6.3 the heading of its subsection §5.6."""
    if key in headings:
        return True
    parts = key[1:].split(".") if key.startswith("§") else []
    return len(parts) >= 3 and "§" + ".".join(parts[:2]) in headings


def test_citation_parser():
    def keys(text):
        return [c.key for c in citations_in_text(text)]

    assert keys("(faithfulness §8.6, Q20 kept)") == ["§8.6", "Q20"]
    assert keys("§9.5–9.6 and §2.1–§2.2") == ["§9.5", "§9.6", "§2.1", "§2.2"]
    assert keys("segment pairs (§5.3–5.5)") == ["§5.3", "§5.4", "§5.5"]
    assert keys("span selection (§5.6.5–6), §5.6.6d") == ["§5.6.5", "§5.6.6", "§5.6.6"]
    assert keys("§9.1/§9.4; §8.1, §10.1") == ["§9.1", "§9.4", "§8.1", "§10.1"]
    assert keys("Faithfulness §9. The rest") == ["§9"]
    assert keys("the quirks Q2–Q5, Q21") == ["Q2", "Q3", "Q4", "Q5", "Q21"]
    assert keys("SQ20 Q20a Q2_x xQ3 Q13/§5.6.8") == ["§5.6.8", "Q13"]
    assert keys("ALBERT's parameter reduction (paper §3.1)") == []


def test_resolution_rules():
    headings = frozenset({"§5", "§5.6", "§9.5", "Q20"})
    assert resolves("§5", headings) and resolves("§5.6", headings) and resolves("Q20", headings)
    assert resolves("§5.6.3", headings)  # a step inside §5.6
    assert not resolves("§5.7", headings)
    assert not resolves("§9", headings)  # a section needs its own heading
    assert not resolves("Q" "21", headings)


def test_document_has_every_section_and_quirk():
    headings = document_headings()
    subsections = {1: 4, 2: 9, 3: 6, 4: 4, 5: 8, 6: 4, 7: 4, 8: 7, 9: 8, 10: 4, 11: 3, 12: 2}
    expected = {f"§{s}" for s in range(1, 14)}
    expected |= {f"§{s}.{n}" for s, count in subsections.items() for n in range(1, count + 1)}
    expected |= {f"Q{q}" for q in range(1, 36)}
    missing = sorted(expected - headings, key=lambda k: (k[0], [int(p) for p in k[1:].split(".")]))
    assert not missing, f"docs/faithfulness.md has no heading for {missing}"


def test_every_citation_resolves():
    headings = document_headings()
    unresolved = []
    scanned = 0
    for path in scanned_files():
        scanned += 1
        for citation in citations_in_text(_read(path), os.path.relpath(path, REPO)):
            if not resolves(citation.key, headings):
                unresolved.append(f"{citation.path}:{citation.line}: {citation.text!r} cites "
                                  f"{citation.key}, which docs/faithfulness.md has no heading for")
    assert scanned > 50, "the scan found too few files: wrong repository root?"
    assert not unresolved, "\n".join(unresolved)


def test_named_modules_exist():
    named = sorted(set(MODULE_PATH.findall(_read(DOCUMENT))))
    assert len(named) > 50
    missing = [p for p in named if not os.path.exists(os.path.join(REPO, p))]
    assert not missing, f"docs/faithfulness.md names modules that do not exist: {missing}"


def test_no_citation_of_the_outside_spec():
    offending = []
    for path in scanned_files():
        text = _read(path)
        for match in OUTSIDE_SPEC.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            offending.append(f"{os.path.relpath(path, REPO)}:{line}: {match.group(0)!r}")
    assert not offending, ("cite docs/faithfulness.md (`faithfulness §8.6`, `Q20`), not the "
                           "outside spec:\n" + "\n".join(offending))
