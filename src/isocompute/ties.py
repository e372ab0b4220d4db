"""Ties and reversals of the optimum: which compute points are evidence for a law of x*(C), and which are not.

At low compute every curve still sits at the base model's value, and near a crossing two curves are level:
there the frontier's argmax is noise. Such a point is a *tie*: it supports neither a level of x* nor a
reversal, and the law is fitted without it. A point is *resolved* on one value of x* when

- with bootstrap replicas (per-problem counts): at least `RESOLVED_SHARE` of the replicas choose exactly
  that value (a 50/50 split between adjacent n is a tie, not "within a factor 2");
- without replicas: the leader's reward exceeds every curve with another value by at least
  `z * sqrt(s_a^2 + s_b^2)`, z the normal quantile of `RESOLVED_SHARE`, where a curve's noise s is what its
  own residuals show (`standard_error`). Two curves at exactly the same value are always a tie, so a flat
  metric (worst@4 = 0 everywhere) has no optimum.

A fall of x* between two resolved points refuses a rising law (and a rise a falling one) only where the
fall itself is resolved: in at least `RESOLVED_SHARE` of the replicas, or, without replicas, between two
resolved points (each leader beats the other's value there). A fall inside the noise is fitted through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from isocompute.fitting import LAW_MIN_POINTS, FitFailure, OptimumFit, RewardFit, fit_law, optimum_name
from isocompute.frontier import Curve

# A compute point's optimum is resolved where at least this share of the bootstrap replicas choose it.
RESOLVED_SHARE = 0.8
# The same confidence without replicas: the leader's margin in standard errors of the difference.
RESIDUAL_Z = float(norm.ppf(RESOLVED_SHARE))
# A value chosen by at least this share of the replicas is one of the leaders a tie names.
LEADER_SHARE = 1.0 - RESOLVED_SHARE


@dataclass(frozen=True)
class Ties:
    """Per compute point of the optimum: whether it is a tie, the values that cannot be told apart, and why."""

    tie: np.ndarray
    leaders: list[list[int]]
    reasons: list[str | None]
    rule: str

    @property
    def resolved(self) -> np.ndarray:
        return ~self.tie

    def without_lone_extremes(self, values: np.ndarray) -> Ties:
        """These ties, plus the resolved point of a lowest or highest value of x* that no other resolved point
        shares. A law's plateaus are its lowest and highest levels; one point is no plateau, and at low compute,
        where every curve still sits at the base value, a lone winner is the pattern noise makes (the largest
        of many equal curves is resolved against each of them more often than one would think)."""
        tie, reasons = self.tie.copy(), list(self.reasons)
        while True:
            kept = [int(v) for v in np.asarray(values)[~tie]]
            counts = Counter(kept)
            lone = [v for v in {min(kept), max(kept)} if counts[v] == 1] if len(counts) > 2 else []
            if not lone:
                return Ties(tie, self.leaders, reasons, self.rule)
            for index in np.flatnonzero(~tie):
                if int(values[index]) in lone:
                    tie[index] = True
                    reasons[index] = (
                        f"the only resolved point at {int(values[index])}, the lowest or highest value: one point "
                        f"is no level"
                    )

    def at(self, indices: np.ndarray) -> Ties:
        """These ties at a subset of their points (the points a truncated fit keeps)."""
        return Ties(self.tie[indices], [self.leaders[i] for i in indices], [self.reasons[i] for i in indices], self.rule)

    def inside(self, values: np.ndarray) -> int:
        """How many ties have every leader strictly between the lowest and the highest of the resolved
        `values`: points inside a transition whose exact level the data leave open. They are no level and
        no data of the law's fit, but they do show that the change passes through intermediate values."""
        if not len(values):
            return 0
        low, high = min(values), max(values)
        return sum(tied and all(low < v < high for v in named) for tied, named in zip(self.tie, self.leaders))


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
    return Ties(np.array(tie, dtype=bool), leaders, reasons, "bootstrap").without_lone_extremes(values)


def standard_error(curve: Curve) -> float:
    """The noise of one evaluation of a curve, from its own residuals: a fitted curve's rmse; for a curve
    without a fit, the spread of its successive differences / sqrt(2). NaN where neither can be told.

    One evaluation's noise, not the smaller standard error of a fitted value: near the base value, where
    every curve starts, a fit's local shape is least certain, and treating the fitted curves as exact there
    turned noise into resolved optima on the known-truth scenarios.
    """
    if isinstance(curve.fit, RewardFit):
        return float(curve.fit.rmse)
    order = np.argsort(curve.compute)
    steps = np.diff(curve.reward[order])
    return float(np.std(steps, ddof=1) / np.sqrt(2)) if len(steps) >= 2 else float("nan")


def residual_ties(curves: Sequence[Curve], compute: np.ndarray, by: Sequence[str], column: str) -> Ties:
    """Ties at `compute` (where some curve is a candidate) from the curves' own residual noise, for `column`."""
    position = list(by).index(column)
    values = [curve.values(compute, extrapolate=False)[0] for curve in curves]
    errors = np.array([standard_error(curve) for curve in curves])
    known = errors[np.isfinite(errors)]
    errors = np.where(np.isfinite(errors), errors, np.median(known) if len(known) else 0.0)
    tie, leaders, reasons, optimum = [], [], [], []
    for index in range(len(compute)):
        at = np.array([v[index] for v in values])
        candidates = np.flatnonzero(~np.isnan(at))
        best = candidates[np.argmax(at[candidates])]
        optimum.append(curves[best].key[position])
        margin = RESIDUAL_Z * np.sqrt(errors[best] ** 2 + errors[candidates] ** 2)
        close = candidates[at[best] - at[candidates] <= margin]
        named = sorted({curves[i].key[position] for i in close})
        tied = len(named) > 1
        tie.append(tied)
        leaders.append(named)
        if tied:
            rival = max((i for i in close if curves[i].key[position] != curves[best].key[position]), key=lambda i: at[i])
            reasons.append(
                f"{column} = {', '.join(map(str, named))} within noise: the leader's reward exceeds {column} = "
                f"{curves[rival].key[position]}'s by {at[best] - at[rival]:.3g}, less than {RESIDUAL_Z:.2f} x the noise of "
                f"the difference ({margin[list(candidates).index(rival)]:.3g}, from the curves' residuals)"
            )
        else:
            reasons.append(None)
    return Ties(np.array(tie, dtype=bool), leaders, reasons, "residuals").without_lone_extremes(np.array(optimum))


def reversal_share(chosen: np.ndarray | None, before: int, after: int, sign: int) -> float | None:
    """The share of replicas in which x* at point `after` lies against `sign` from x* at `before` (None without
    replicas, where a reversal between two resolved points counts as resolved)."""
    if chosen is None:
        return None
    pair = chosen[:, [before, after]]
    pair = pair[~np.isnan(pair).any(axis=1)]
    if not len(pair):
        return 0.0
    return float(np.mean(np.sign(pair[:, 1] - pair[:, 0]) == -sign))


def law_of_resolved(
    compute: np.ndarray,
    values: np.ndarray,
    column: str,
    ties: Ties,
    start: OptimumFit | None = None,
    noise_reversals: Collection[int] = (),
) -> OptimumFit | FitFailure:
    """The law of x* fitted to the resolved points only (`noise_reversals` index those), or why not; where too
    few points are resolved to say anything, the refusal says that the others are ties rather than naming
    a level that one or two points happen to hold."""
    keep = ties.resolved
    resolved = np.asarray(values)[keep]
    law = fit_law(np.asarray(compute)[keep], resolved, column, start, noise_reversals, ties.inside(resolved))
    thin = isinstance(law, FitFailure) and law.kind in ("no_points", "too_few_points", "constant")
    if thin and keep.sum() < LAW_MIN_POINTS and ties.tie.any():
        return FitFailure(
            "unresolved",
            f"only {int(keep.sum())} of {len(keep)} compute points are resolved (the others are ties: their "
            f"leaders cannot be told apart by the {ties.rule}); a law of {optimum_name(column)} needs {LAW_MIN_POINTS}",
        )
    return law
