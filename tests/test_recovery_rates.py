"""The law-finder's rates over many draws of every known-truth family (tests/recovery_rates.py): a moving
truth gets its law within a factor 2 at >= 80 % of its points, a truth with no law gets none, and a monotone
truth is not refused as not monotone, with per-problem counts and without. Heavy: `DRAWS` draws of each
family on both cores (the first of the 50 draws published in docs/log/fits-simultaneous.md, so each bound
below follows from the published table whatever those draws hold)."""

from __future__ import annotations

import pytest
from recovery_rates import ALL, kind, measure

# Draws per family and counts setting, and the first seed: those of the published table (seeds 1000-1049),
# which no setting was chosen on (the pilots drew seeds 0-9). 12 draws, not more, so that the heavy step fits
# CI's 90 minutes with the rest (20 draws took 19 min 40 s on both cores of the 2-core machine).
DRAWS = 12
FIRST_SEED = 1000
# Misses allowed among the `DRAWS` draws: no more than the published 50 draws hold. A bar met there (found in
# >= 95 %, a false law or a false reversal in <= 5 %) allows at most `MISSES`; where the published table misses a
# bar, its own count (`PUBLISHED_MISSES`), so that a regression fails: the fixed-B question from its first step
# missed in 8 (counts) and 5 (none) of 50; `close_not_monotone`'s short, close dip given a law in 11 and 10.
MISSES = 2
PUBLISHED_MISSES = {
    ("close_fixed_batch_early", True): 8,
    ("close_fixed_batch_early", False): 5,
    ("close_not_monotone", True): 11,
    ("close_not_monotone", False): 10,
}


def draws(share: float) -> int:
    """How many of the `DRAWS` draws a measured share is (compared as counts, not floats)."""
    return round(share * DRAWS)


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
    assert draws(1 - r.found) <= PUBLISHED_MISSES.get((name, counts), MISSES), (r.found, dict(r.verdicts))
    assert draws(r.not_monotone) <= MISSES, (r.not_monotone, dict(r.verdicts))


@pytest.mark.heavy
@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", [name for name in ALL if kind(name) == "no_law"])
def test_a_truth_without_a_law_gets_none(rates: dict, name: str, counts: bool) -> None:
    r = rates[(name, counts)]
    assert draws(r.false_law) <= MISSES, (r.false_law, dict(r.verdicts))
    assert draws(r.not_monotone) <= MISSES, (r.not_monotone, dict(r.verdicts))


@pytest.mark.heavy
@pytest.mark.parametrize("counts", [True, False])
@pytest.mark.parametrize("name", [name for name in ALL if kind(name) == "not_monotone"])
def test_a_truth_that_falls_back_gets_no_law(rates: dict, name: str, counts: bool) -> None:
    r = rates[(name, counts)]
    assert draws(r.false_law) <= PUBLISHED_MISSES.get((name, counts), MISSES), (r.false_law, dict(r.verdicts))
