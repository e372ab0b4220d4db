"""Ties of the optimum: at which compute points the replicas cannot tell the leaders apart.

At low compute every curve still sits at the base model's value, and near a crossing two curves are level:
there the frontier's argmax is noise. Such a point is a *tie*: `optimum_points` says so, with the values the
replicas split between and why, so a reader sees where the frontier's x* is firm. It is information, never a
filter: the law is fitted to x* at every compute point and judged from the replicas' own laws
(`isocompute.fits.law`), and there a tie between 32 and 64 is what it is, a law passing between them.

A point is *resolved* on one value of x* where at least `RESOLVED_SHARE` of the bootstrap replicas choose
exactly that value (a 50/50 split between adjacent n is a tie, not "within a factor 2"); its leaders are the
values chosen by at least `LEADER_SHARE` of the replicas.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from isocompute.fits.law import RESOLVED_SHARE

# A value chosen by at least this share of the replicas is one of the leaders a tie names.
LEADER_SHARE = 1.0 - RESOLVED_SHARE


@dataclass(frozen=True)
class Ties:
    """Per compute point of the optimum: whether it is a tie, the values that cannot be told apart, and why."""

    tie: np.ndarray
    leaders: list[list[int]]
    reasons: list[str | None]

    @property
    def resolved(self) -> np.ndarray:
        return ~self.tie


def bootstrap_ties(values: np.ndarray, chosen: np.ndarray, column: str) -> Ties:
    """Ties from the replicas' choices (`chosen`: replicas x points, NaN where a replica has no frontier)."""
    tie, leaders, reasons = [], [], []
    for index, value in enumerate(values):
        picks = chosen[:, index]
        picks = picks[~np.isnan(picks)].astype(int)
        shares = {v: c / len(picks) for v, c in Counter(picks.tolist()).items()} if len(picks) else {}
        share = shares.get(int(value), 0.0)
        named = sorted({int(value), *(v for v, s in shares.items() if s >= LEADER_SHARE)})
        tied = share < RESOLVED_SHARE
        tie.append(tied)
        leaders.append(named if tied else [int(value)])
        spread = ", ".join(f"{v} in {shares.get(v, 0.0):.0%}" for v in named)
        reasons.append(
            f"{column} = {spread} of replicas; a resolved point needs {RESOLVED_SHARE:.0%} on one value" if tied else None
        )
    return Ties(np.array(tie, dtype=bool), leaders, reasons)
