"""The law-finder's rates over many draws of every known-truth family (tests/recovery_rates.py): a moving
truth gets its law within a factor 2 at >= 80 % of its points, a truth with no law gets none, and a monotone
truth is not refused as not monotone, with per-problem counts and without. Heavy: `DRAWS` draws of each
family on both cores (the first 20 of the 50 draws published in docs/log/fits-simultaneous.md, so each bound
below follows from the published table whatever the 20 draws hold)."""

from __future__ import annotations

import pytest
from recovery_rates import ALL, kind, measure

# Draws per family and counts setting, and the first seed: those of the published table (seeds 1000-1049),
# which no setting was chosen on (the pilots drew seeds 0-9).
DRAWS = 20
FIRST_SEED = 1000
# At most two misses in 20 draws: the bars (found in >= 95 %, a false law or a false reversal in <= 5 %)
# met over the published 50 draws allow up to two misses among any 20 of them.
FOUND, FALSE = 0.9, 0.1
# Where the published table misses a bar, the level it reached, so that a regression fails: the fixed-B
# question from its first step found in 84 % (counts) and 90 % (none) of 50 draws (at most 8 and 5 misses);
# `close_not_monotone`'s short, close dip given a law in 22 % and 20 % of them (at most 11 and 10).
REACHED = {("close_fixed_batch_early", True): 0.6, ("close_fixed_batch_early", False): 0.75}
LAWS_ON_A_DIP = {"close_not_monotone": 0.55}


@pytest.fixture(scope="module")
def rates() -> dict[tuple[str, bool], object]:
    found = measure(list(ALL), DRAWS, workers=2, first_seed=FIRST_SEED)
    for r in found:
        print(f"{r.name:30} counts {'yes' if r.counts else 'no ':3} found {r.found:.0%} false law {r.false_law:.0%} "
              f"not_monotone {r.not_monotone:.0%} {dict(r.verdicts)}")  # fmt: skip
    return {(r.name, r.counts): r for r in found}


@pytest.mark.heavy
@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", [name for name in ALL if kind(name) in ("rising", "falling")])
def test_a_moving_truth_gets_its_law(rates: dict, name: str, counts: bool) -> None:
    r = rates[(name, counts)]
    assert r.found >= REACHED.get((name, counts), FOUND), (r.found, dict(r.verdicts))
    assert r.not_monotone <= FALSE, (r.not_monotone, dict(r.verdicts))


@pytest.mark.heavy
@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", [name for name in ALL if kind(name) == "no_law"])
def test_a_truth_without_a_law_gets_none(rates: dict, name: str, counts: bool) -> None:
    r = rates[(name, counts)]
    assert r.false_law <= FALSE, (r.false_law, dict(r.verdicts))
    assert r.not_monotone <= FALSE, (r.not_monotone, dict(r.verdicts))


@pytest.mark.heavy
@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", [name for name in ALL if kind(name) == "not_monotone"])
def test_a_truth_that_falls_back_gets_no_law(rates: dict, name: str, counts: bool) -> None:
    r = rates[(name, counts)]
    assert r.false_law <= LAWS_ON_A_DIP.get(name, FALSE), (r.false_law, dict(r.verdicts))
