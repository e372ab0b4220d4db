"""The leaders at each compute point: every value of x whose reward the data cannot place materially below
the best's.

At a compute point the frontier's argmax is one number, but what the data say is a set. Near every
crossing two adjacent curves are level by definition, and at low compute every curve still sits at the
base model's value, so a fitted argmax there is decided by margins far below what anyone would act on or
what the measurement resolves. A curve is *behind* at a point only when its margin to the best is
material, that is larger than both

- the practical tolerance (`fits.tolerance`, in the metric's units): a difference of reward no one would
  act on (`DEFAULT_TOLERANCE`), and
- what the data resolve: at least `RESOLVED_SHARE` of the bootstrap replicas put the curve behind the
  replica's best by more than the tolerance (the replicas' interval of the margin), and, where the best
  curve is still read at its anchor (it has not risen from its base value by more than one measured
  point's noise), the margin exceeds twice the measured points' own noise: the replicas share the
  sigmoids' shapes near the anchor, so their agreement there measures the model, not the data.

Every other candidate *leads*. A point where every candidate leads says nothing about x*, however many
replicas agree on a fitted argmax there; a point where a single curve was measured has no competitors; a point
where a censored curve (a run that ended below it, or began above it: `isocompute.fits.frontier`) may lead
says nothing either, since what the run would have done there was not measured. None of these is evidence
for or against a law: the law is fitted to, and judged on, the *material* points only (`isocompute.fits.law`).

Each point's leaders are read point by point: they are what the law is fitted through. But a verdict
compares dozens of margins (every curve at every point) and pairs of points, and a rule that holds at
`RESOLVED_SHARE` per comparison finds a spurious margin somewhere on most tables (the bootstrap, centred on
the data, reproduces it): denser evaluation would make a flat truth look less flat. So each point also gets
its *band* (`leading(..., simultaneous=True)`, `simultaneous_behind`): the values the data cannot place
behind at every point at once, from the bootstrap's max statistic of the margins taken step-down. With
probability `FAMILY_LEVEL` every band holds the best value at every point together, so two bands apart
against a monotone truth happen in at most 1 - `FAMILY_LEVEL` of studies, however densely they are
evaluated (neighbouring points' margins move together, so more points barely raise the quantile). The
verdict claims a reversal, and checks the replicas' laws, on the bands (`isocompute.fits.law`). Without
replicas (`bootstrap: 0`, the held-out check's truncated fit) a margin is material when it exceeds the
tolerance and, near the anchor, the noise.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isocompute.fits.forms import Key

# Reward differences up to this (in the metric's units) are ones no user would act on: the reward
# resolution of the validation sets the paper uses, about one and a half problems of 300 solved or not
# (1 / 300 = 0.0033 per problem). Larger margins can still be unresolved: that is the replicas' part. Twice
# this, 0.01, would call levels the paper's "marginal" B_problem effect (~0.012) but hides real steps of
# n* on close curves; known-truth recovery with both is in docs/log/fits-leaders.md.
DEFAULT_TOLERANCE = 0.005
# The share of replicas that makes a finding reproducible (the laws' agreement, a replica's own rise).
RESOLVED_SHARE = 0.8
# The level at which every leader set holds at once: over all curves, pairs and compute points together.
FAMILY_LEVEL = 0.95
# A pair's spread over the replicas is taken as at least this share of the tolerance: differences that vary
# by less resolve nothing the tolerance does not already settle (two curves pinned at the base model's anchor).
SPREAD_FLOOR = 0.5
# Near the anchor a margin must exceed this many times the measured noise of the difference.
NOISE_MULTIPLE = 2.0
# Why a point is or is not evidence: the leaders are a proper subset of the values measured there, every
# measured value leads, a single value was measured, or a censored run may lead there.
MATERIAL, ALL_LEAD, SINGLE, CENSORED = "material", "all_lead", "single", "censored"


@dataclass(frozen=True)
class CurveRewards:
    """The curves' rewards at the compute points (curves x points, NaN where a curve is no candidate), with
    each curve's key, anchor (its value as C -> 0) and the noise of one of its measured points; where given,
    its value where it is censored (`censored`, NaN elsewhere) and its measured range."""

    keys: list[Key]
    rewards: np.ndarray
    anchors: np.ndarray
    noise: np.ndarray
    censored: np.ndarray | None = None
    ranges: list[tuple[float, float]] | None = None

    @property
    def values(self) -> np.ndarray:
        """Measured rewards, and censored values where a curve was not measured (NaN where neither)."""
        return self.rewards if self.censored is None else np.where(np.isnan(self.rewards), self.censored, self.rewards)


@dataclass(frozen=True)
class ColumnLeaders:
    """Per compute point, for one column of the key (n or b_problem): the point estimate's argmax, the values
    that lead (and the smallest and largest of them), and whether the point is evidence (`status`)."""

    values: np.ndarray
    leaders: list[list[int]]
    low: np.ndarray
    high: np.ndarray
    status: list[str]
    reasons: list[str | None]

    @property
    def material(self) -> np.ndarray:
        return np.array([s == MATERIAL for s in self.status], dtype=bool)


def margins(values: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Every candidate's margin to the best measured curve at each point (curves x points; `values` may be a
    stack of replicas, replicas x curves x points), NaN where a curve is no candidate."""
    best = np.max(np.where(measured & ~np.isnan(values), values, -np.inf), axis=-2, keepdims=True)
    return np.where(np.isfinite(best), best - values, np.nan)


def simultaneous_behind(values: np.ndarray, measured: np.ndarray, replicas: np.ndarray, tolerance: float) -> np.ndarray:
    """Where a candidate's margin to the best measured curve exceeds `tolerance` at every curve and point at once
    (curves x points): its lower bound m - q s above the tolerance, with s the margin's spread over the replicas
    (at least `SPREAD_FLOOR` x the tolerance) and q the quantile `FAMILY_LEVEL` over replicas of the largest
    studentized excursion (m* - m) / s over the comparisons still open (the bootstrap max statistic; each replica
    takes its own best, so the selection of the best is in the statistic). Step-down (Romano and Wolf 2005):
    the comparisons found behind leave the family and q is taken again over the rest, until none is added; the
    family-wise level holds and the clear margins do not widen the close ones' bounds. `values` and `replicas`
    (replicas x curves x points) hold measured and censored values."""
    margin = margins(values, measured)
    replica_margin = margins(replicas, measured[None])
    with warnings.catch_warnings():  # a margin no two replicas hold has no spread: it is no comparison (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.maximum(np.nanstd(replica_margin, axis=0, ddof=1), SPREAD_FLOOR * tolerance)
    excursion = np.where(np.isnan(replica_margin), -np.inf, (replica_margin - margin[None]) / spread[None])
    open_ = ~np.isnan(margin) & ~np.isnan(spread)
    behind = np.zeros_like(open_)
    while open_.any():
        largest = excursion[:, open_].max(axis=1)
        quantile = float(np.quantile(largest[np.isfinite(largest)], FAMILY_LEVEL)) if np.isfinite(largest).any() else 0.0
        found = open_ & (margin - quantile * spread > tolerance)
        if not found.any():
            break
        behind |= found
        open_ &= ~found
    return behind


def leading(point: CurveRewards, tolerance: float, replicas: Sequence[np.ndarray] = (), simultaneous: bool = False) -> np.ndarray:
    """Which curves lead at which points (curves x points, False where a curve is no candidate; a censored
    curve is a candidate).

    `replicas` are the replicas' value matrices (curves x points, the same curves and points; measured rewards
    and censored values as in `CurveRewards.values`). Point by point, a curve is behind only where at least
    `RESOLVED_SHARE` of them put it behind their own best measured curve by more than `tolerance`; with
    `simultaneous`, only where some measured curve beats it by more than `tolerance` at the simultaneous lower
    bound (`simultaneous_behind`). Either way the point estimate's margin to the best measured curve must
    exceed the tolerance and, near the anchor, the noise (see the module's docstring).
    """
    values = point.values
    measured = ~np.isnan(point.rewards)
    candidate = ~np.isnan(values)
    best_index = np.argmax(np.where(measured, values, -np.inf), axis=0)
    columns = np.arange(values.shape[1])
    best = values[best_index, columns]
    margin = best[None, :] - values
    floor = np.full(values.shape, tolerance)
    risen = best - point.anchors[best_index] > point.noise[best_index]
    pair_noise = NOISE_MULTIPLE * np.sqrt(point.noise[:, None] ** 2 + point.noise[best_index][None, :] ** 2)
    floor = np.where(risen[None, :], floor, np.maximum(floor, pair_noise))
    behind = (margin > floor) & measured.any(axis=0)[None, :]
    if len(replicas) and simultaneous:
        behind &= simultaneous_behind(values, measured, np.stack(replicas), tolerance)
    elif len(replicas):
        stack = np.stack(replicas)
        replica_best = np.max(np.where(measured[None] & ~np.isnan(stack), stack, -np.inf), axis=1, keepdims=True)
        behind &= np.mean(replica_best - stack > tolerance, axis=0) >= RESOLVED_SHARE
    return candidate & ~behind


def replica_leading(rewards: np.ndarray, tolerance: float) -> np.ndarray:
    """A replica's own leaders: every candidate within `tolerance` of its best (one draw of the data resolves
    nothing by itself; the spread over replicas is what the data resolve)."""
    candidate = ~np.isnan(rewards)
    best = np.nanmax(np.where(candidate, rewards, -np.inf), axis=0)
    return candidate & (best[None, :] - rewards <= tolerance)


def column_leaders(
    keys: Sequence[Key], rewards: np.ndarray, lead: np.ndarray, position: int, column: str,
    censored: np.ndarray | None = None, ranges: Sequence[tuple[float, float]] | None = None,
) -> ColumnLeaders:
    """The leaders of one column of the key (its `position`) at each point, from the measured curves that lead.

    `censored` (curves x points, True where a curve is censored: `CurveRewards.censored` not NaN) with the
    curves' measured `ranges`: a point where a censored curve leads is `CENSORED`, its reason naming the run
    and where it ended (or began); a censored curve that is behind counts among the values the point tells
    apart."""
    measured_at = ~np.isnan(rewards)
    censored = np.zeros_like(measured_at) if censored is None else censored & ~measured_at
    best_index = np.argmax(np.where(measured_at, rewards, -np.inf), axis=0)
    of = np.array([key[position] for key in keys])
    values, leaders, low, high, status, reasons = [], [], [], [], [], []
    for j in range(rewards.shape[1]):
        measured = sorted({int(v) for v in of[measured_at[:, j]]})
        candidates = sorted({int(v) for v in of[measured_at[:, j] | censored[:, j]]})
        named = sorted({int(v) for v in of[lead[:, j] & measured_at[:, j]]}) if measured_at[:, j].any() else []
        values.append(int(of[best_index[j]]) if measured else 0)
        leaders.append(named)
        low.append(min(named) if named else np.nan)
        high.append(max(named) if named else np.nan)
        open_runs = np.flatnonzero(lead[:, j] & censored[:, j])
        if len(open_runs) and measured:
            status.append(CENSORED)
            reasons.append("; ".join(_censored_reason(column, int(of[i]), ranges[i] if ranges else None) for i in open_runs)
                           + f": no evidence of {column}*")  # fmt: skip
        elif len(candidates) <= 1:
            status.append(SINGLE)
            reasons.append(f"only {column} = {measured[0] if measured else '-'} was measured here: no competitors")
        elif named == candidates:
            status.append(ALL_LEAD)
            reasons.append(f"every {column} measured here ({', '.join(map(str, measured))}) leads: no evidence of {column}*")
        else:
            status.append(MATERIAL)
            reasons.append(None)
    return ColumnLeaders(np.array(values), leaders, np.array(low, dtype=float), np.array(high, dtype=float), status, reasons)


def _censored_reason(column: str, value: int, measured_range: tuple[float, float] | None) -> str:
    """Why a censored run may lead at a point: it was measured elsewhere only (where, when known)."""
    if measured_range is None:
        return f"{column} = {value} was not measured here and may lead"
    return f"{column} = {value}, measured only from C = {measured_range[0]:.3g} to {measured_range[1]:.3g}, may lead here"


def resolved_at_once(point: ColumnLeaders, band: ColumnLeaders) -> ColumnLeaders:
    """The point by point leaders, but the band's own row (its leaders, status and reason) where the band holds
    every value measured there: such a point is no evidence, whatever margin the point by point reading finds.
    Without this a per-comparison margin at the low-compute end, where every curve sits at the anchor and the
    sigmoids' shapes decide, enters the law as a move of x*."""
    keep = [b == ALL_LEAD for b in band.status]
    pick = lambda ours, theirs: [t if k else o for o, t, k in zip(ours, theirs, keep)]  # noqa: E731
    return ColumnLeaders(
        point.values, pick(point.leaders, band.leaders), np.where(keep, band.low, point.low),
        np.where(keep, band.high, point.high), pick(point.status, band.status), pick(point.reasons, band.reasons),
    )  # fmt: skip
