"""The verdict rules on hand-computed cases: each boundary of each rule."""

from __future__ import annotations

import pytest

from albert_tf.experiments import verdicts as V


@pytest.mark.parametrize("a,b,base,outcome", [
    ([80, 82, 84], [70, 71, 72], None, V.REPRODUCED),      # gap 11 > spread 4
    ([80, 82, 84], [79, 80, 81], None, V.INCONCLUSIVE),    # gap 2 ≤ spread 4
    ([70, 71, 72], [80, 82, 84], None, V.NOT_REPRODUCED),  # gap −11 < −4
    ([75], [73], 1.5, V.REPRODUCED),                        # one seed each: base spread 1.5
    ([75], [73], 2.5, V.INCONCLUSIVE),
    ([75], [73], None, V.INCONCLUSIVE),                     # no spread at all
])
def test_ordering_claim(a, b, base, outcome):
    assert V.greater("5", "claim", "paper", a, b, base).outcome == outcome


@pytest.mark.parametrize("a,b,base,outcome", [
    ([78.5], [80.0], 1.0, V.REPRODUCED),      # loss 1.5 ≤ 2
    ([78.0], [80.0], 1.0, V.REPRODUCED),      # loss exactly 2
    ([77.5], [80.0], 1.0, V.INCONCLUSIVE),    # 2 < loss 2.5 ≤ 2 + 1
    ([76.5], [80.0], 1.0, V.NOT_REPRODUCED),  # loss 3.5 > 3
    ([76.5], [80.0], None, V.INCONCLUSIVE),   # beyond the margin, but no spread to judge by
    ([85.0], [80.0], None, V.REPRODUCED),     # a gain
])
def test_loses_little_claim(a, b, base, outcome):
    assert V.loses_little("4", "claim", "paper", a, b, base).outcome == outcome


@pytest.mark.parametrize("values,near,above", [
    ([52.0, 54.9, 46.0], V.REPRODUCED, V.NOT_REPRODUCED),
    ([52.0, 56.0], V.INCONCLUSIVE, V.INCONCLUSIVE),
    ([61.0, 80.0], V.NOT_REPRODUCED, V.REPRODUCED),
    ([44.0, 58.0], V.NOT_REPRODUCED, V.INCONCLUSIVE),
    ([59.9, 75.0], V.NOT_REPRODUCED, V.INCONCLUSIVE),
])
def test_chance_claims(values, near, above):
    assert V.near_chance("5", "c", "p", values).outcome == near
    assert V.clearly_above_chance("5", "c", "p", values).outcome == above


@pytest.mark.parametrize("speedups,outcome", [
    ([1.02, 1.10, 1.05], V.REPRODUCED), ([0.98, 1.03], V.INCONCLUSIVE), ([0.9, 1.0], V.NOT_REPRODUCED)])
def test_speed_claim(speedups, outcome):
    assert V.faster("2", "c", "1.7×", speedups).outcome == outcome


def test_missing_values_are_inconclusive():
    assert V.greater("5", "c", "p", [float("nan")], [50.0], 1.0).outcome == V.INCONCLUSIVE
    assert V.near_chance("5", "c", "p", []).outcome == V.INCONCLUSIVE


def test_reasons_name_the_numbers():
    verdict = V.greater("5", "c", "p", [80, 82, 84], [70, 71, 72])
    assert "+11.0" in verdict.reason and "4.0" in verdict.reason
