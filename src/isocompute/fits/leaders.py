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
replicas agree on a fitted argmax there; a point where a single curve was measured has no competitors
(each n covers its own compute range when runs of different n train the same number of steps). Neither is
evidence for or against a law: the law is fitted to, and judged on, the *material* points only
(`isocompute.fits.law`). Without replicas (`bootstrap: 0`, the held-out check's truncated fit) a margin is
material when it exceeds the tolerance and, near the anchor, the noise.
"""

from __future__ import annotations

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
# The share of replicas that makes a finding reproducible (a reversal, a margin, the laws' agreement).
RESOLVED_SHARE = 0.8
# Near the anchor a margin must exceed this many times the measured noise of the difference.
NOISE_MULTIPLE = 2.0
# Why a point is or is not evidence: the leaders are a proper subset of the values measured there, every
# measured value leads, or a single value was measured.
MATERIAL, ALL_LEAD, SINGLE = "material", "all_lead", "single"


@dataclass(frozen=True)
class CurveRewards:
    """The curves' rewards at the compute points (curves x points, NaN where a curve is no candidate), with
    each curve's key, anchor (its value as C -> 0) and the noise of one of its measured points."""

    keys: list[Key]
    rewards: np.ndarray
    anchors: np.ndarray
    noise: np.ndarray


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


def leading(
    point: CurveRewards, tolerance: float, replicas: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """Which curves lead at which points (curves x points, False where a curve is no candidate).

    `replicas` are the replicas' reward matrices (curves x points, the same curves and points): a curve is
    behind only where at least `RESOLVED_SHARE` of them put it behind their own best by more than
    `tolerance`, besides the point estimate's margin (see the module's docstring).
    """
    rewards = point.rewards
    candidate = ~np.isnan(rewards)
    best_index = np.argmax(np.where(candidate, rewards, -np.inf), axis=0)
    columns = np.arange(rewards.shape[1])
    best = rewards[best_index, columns]
    margin = best[None, :] - rewards
    floor = np.full(rewards.shape, tolerance)
    risen = best - point.anchors[best_index] > point.noise[best_index]
    pair_noise = NOISE_MULTIPLE * np.sqrt(point.noise[:, None] ** 2 + point.noise[best_index][None, :] ** 2)
    floor = np.where(risen[None, :], floor, np.maximum(floor, pair_noise))
    behind = margin > floor
    if len(replicas):
        stack = np.stack(replicas)
        replica_best = np.nanmax(np.where(np.isnan(stack), -np.inf, stack), axis=1, keepdims=True)
        shares = np.mean(replica_best - stack > tolerance, axis=0)
        behind &= shares >= RESOLVED_SHARE
    return candidate & ~behind


def replica_leading(rewards: np.ndarray, tolerance: float) -> np.ndarray:
    """A replica's own leaders: every candidate within `tolerance` of its best (one draw of the data resolves
    nothing by itself; the spread over replicas is what the data resolve)."""
    candidate = ~np.isnan(rewards)
    best = np.nanmax(np.where(candidate, rewards, -np.inf), axis=0)
    return candidate & (best[None, :] - rewards <= tolerance)


def column_leaders(keys: Sequence[Key], rewards: np.ndarray, lead: np.ndarray, position: int, column: str) -> ColumnLeaders:
    """The leaders of one column of the key (its `position`) at each point, from the curves that lead."""
    candidate = ~np.isnan(rewards)
    best_index = np.argmax(np.where(candidate, rewards, -np.inf), axis=0)
    of = np.array([key[position] for key in keys])
    values, leaders, low, high, status, reasons = [], [], [], [], [], []
    for j in range(rewards.shape[1]):
        measured = sorted({int(v) for v in of[candidate[:, j]]})
        named = sorted({int(v) for v in of[lead[:, j]]}) if candidate[:, j].any() else []
        values.append(int(of[best_index[j]]) if measured else 0)
        leaders.append(named)
        low.append(min(named) if named else np.nan)
        high.append(max(named) if named else np.nan)
        if len(measured) <= 1:
            status.append(SINGLE)
            reasons.append(f"only {column} = {measured[0] if measured else '-'} was measured here: no competitors")
        elif named == measured:
            status.append(ALL_LEAD)
            reasons.append(f"every {column} measured here ({', '.join(map(str, measured))}) leads: no evidence of {column}*")
        else:
            status.append(MATERIAL)
            reasons.append(None)
    return ColumnLeaders(np.array(values), leaders, np.array(low, dtype=float), np.array(high, dtype=float), status, reasons)
