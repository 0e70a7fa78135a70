"""The verdict rules, fixed before any full run and applied mechanically to its numbers.

Each claim of the paper gets one of three outcomes: "reproduced in direction" (ours shows
the paper's ordering beyond the seed spread), "not reproduced" (ours shows the opposite, or
misses the threshold, beyond the seed spread) or "inconclusive" (the difference is within
the seed spread, or there is no spread to judge by). The seed spread of a row is max − min
over its seeds; a table whose rows have one seed each borrows the spread of the base model
(Table 5's SOP row: the same model, data and budget, three seeds).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Sequence

REPRODUCED = "reproduced in direction"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"

MARGIN = 2.0  # "loses little": a loss of at most this many accuracy points
CHANCE = 50.0  # both sentence tasks are balanced two-way choices
CHANCE_BAND = 5.0  # "near chance": within this many points of 50%
CLEARLY_ABOVE = 60.0  # "clearly above chance": at least this accuracy

RULES = f"""\
- Seed spread s of a row = max − min over its seeds. Rows with one seed (Tables 3 and 4) use
  s of the base model (Table 5's SOP row: same model, data and budget, {{seeds}} seed(s)).
- "A > B" (an ordering claim): with gap d = mean(A) − mean(B) and s = the larger spread of the
  two rows: reproduced in direction iff d > s; not reproduced iff d < −s; else inconclusive.
  No spread (one seed and no base spread): inconclusive.
- "A loses little against B": d = mean(A) − mean(B); reproduced in direction iff
  d ≥ −{MARGIN:g} points; not reproduced iff d < −({MARGIN:g} + s); else inconclusive.
- "near chance": reproduced in direction iff every seed is within {CHANCE_BAND:g} points of
  {CHANCE:g}%; not reproduced iff every seed is outside that band; else inconclusive.
- "clearly above chance": reproduced in direction iff every seed is ≥ {CLEARLY_ABOVE:g}%; not
  reproduced iff every seed is < {CHANCE + CHANCE_BAND:g}%; else inconclusive.
- "ALBERT-large trains faster than BERT-large": reproduced in direction iff ALBERT's step is
  faster in every timing round (speedup > 1); not reproduced iff it is not faster in any
  round; else inconclusive. The magnitude (the paper's 1.7×) is reported, not judged.
- Accuracies are percentages; a verdict names the numbers it compared."""


@dataclasses.dataclass
class Verdict:
    table: str
    claim: str
    paper: str
    outcome: str
    reason: str


def spread(values: Sequence[float]) -> float | None:
    """max − min over seeds; None for fewer than two values."""
    return max(values) - min(values) if len(values) >= 2 else None


def _finite(*groups: Sequence[float]) -> bool:
    return all(groups) and all(math.isfinite(v) for g in groups for v in g)


def _noise(a: Sequence[float], b: Sequence[float], base: float | None) -> float | None:
    spreads = [s for s in (spread(a), spread(b)) if s is not None]
    if spreads:
        return max(spreads + ([base] if base is not None else []))
    return base


def greater(table: str, claim: str, paper: str, a: Sequence[float], b: Sequence[float],
            base_spread: float | None = None) -> Verdict:
    """Claim "A > B"."""
    if not _finite(a, b):
        return Verdict(table, claim, paper, INCONCLUSIVE, "a value is missing")
    gap = statistics.mean(a) - statistics.mean(b)
    noise = _noise(a, b, base_spread)
    if noise is None:
        return Verdict(table, claim, paper, INCONCLUSIVE,
                       f"gap {gap:+.1f}; one seed, no seed spread to judge it by")
    if gap > noise:
        return Verdict(table, claim, paper, REPRODUCED,
                       f"gap {gap:+.1f} exceeds the seed spread {noise:.1f}")
    if gap < -noise:
        return Verdict(table, claim, paper, NOT_REPRODUCED,
                       f"opposite ordering: gap {gap:+.1f} beyond the seed spread {noise:.1f}")
    return Verdict(table, claim, paper, INCONCLUSIVE,
                   f"gap {gap:+.1f} is within the seed spread {noise:.1f}")


def loses_little(table: str, claim: str, paper: str, a: Sequence[float], b: Sequence[float],
                 base_spread: float | None = None) -> Verdict:
    """Claim "A (the cheaper model) loses at most MARGIN points against B"."""
    if not _finite(a, b):
        return Verdict(table, claim, paper, INCONCLUSIVE, "a value is missing")
    gap = statistics.mean(a) - statistics.mean(b)
    noise = _noise(a, b, base_spread)
    if gap >= -MARGIN:
        return Verdict(table, claim, paper, REPRODUCED,
                       f"difference {gap:+.1f} (a loss of at most {MARGIN:g} points)")
    if noise is not None and gap < -(MARGIN + noise):
        return Verdict(table, claim, paper, NOT_REPRODUCED,
                       f"loss {-gap:.1f} exceeds {MARGIN:g} points by more than the seed spread "
                       f"{noise:.1f}")
    spread_text = "no seed spread" if noise is None else f"seed spread {noise:.1f}"
    return Verdict(table, claim, paper, INCONCLUSIVE,
                   f"loss {-gap:.1f} exceeds {MARGIN:g} points but not beyond the {spread_text}")


def near_chance(table: str, claim: str, paper: str, values: Sequence[float]) -> Verdict:
    if not _finite(values):
        return Verdict(table, claim, paper, INCONCLUSIVE, "a value is missing")
    shown = ", ".join(f"{v:.1f}" for v in values)
    inside = [abs(v - CHANCE) < CHANCE_BAND for v in values]
    if all(inside):
        return Verdict(table, claim, paper, REPRODUCED,
                       f"every seed ({shown}) within {CHANCE_BAND:g} points of {CHANCE:g}%")
    if not any(inside):
        return Verdict(table, claim, paper, NOT_REPRODUCED,
                       f"every seed ({shown}) is {CHANCE_BAND:g}+ points from {CHANCE:g}%")
    return Verdict(table, claim, paper, INCONCLUSIVE, f"seeds ({shown}) on both sides of the band")


def clearly_above_chance(table: str, claim: str, paper: str, values: Sequence[float]) -> Verdict:
    if not _finite(values):
        return Verdict(table, claim, paper, INCONCLUSIVE, "a value is missing")
    shown = ", ".join(f"{v:.1f}" for v in values)
    if all(v >= CLEARLY_ABOVE for v in values):
        return Verdict(table, claim, paper, REPRODUCED, f"every seed ({shown}) ≥ {CLEARLY_ABOVE:g}%")
    if all(v < CHANCE + CHANCE_BAND for v in values):
        return Verdict(table, claim, paper, NOT_REPRODUCED,
                       f"every seed ({shown}) < {CHANCE + CHANCE_BAND:g}%")
    return Verdict(table, claim, paper, INCONCLUSIVE,
                   f"seeds ({shown}) between {CHANCE + CHANCE_BAND:g}% and {CLEARLY_ABOVE:g}%")


def faster(table: str, claim: str, paper: str, speedups: Sequence[float]) -> Verdict:
    if not _finite(speedups):
        return Verdict(table, claim, paper, INCONCLUSIVE, "no timing")
    shown = ", ".join(f"{r:.2f}×" for r in speedups)
    if all(r > 1 for r in speedups):
        return Verdict(table, claim, paper, REPRODUCED, f"faster in every round ({shown})")
    if not any(r > 1 for r in speedups):
        return Verdict(table, claim, paper, NOT_REPRODUCED, f"not faster in any round ({shown})")
    return Verdict(table, claim, paper, INCONCLUSIVE, f"faster in some rounds only ({shown})")
