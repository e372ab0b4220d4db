"""The compute-optimal frontier: at each compute, the best curve among those measured there.

A curve is a candidate at compute C only inside its measured range, from its first to its last point:
below its first point the run has not taken a single step, above its last it was never trained, and a
fitted sigmoid says nothing reliable there. Where a user asks for extrapolation, curves compete outside
their ranges too and the frontier marks each such value. A curve whose sigmoid could not be fitted still
competes inside its range with its measured points (interpolated in log C), marked as not fitted, so a
failed fit never silently removes a curve from the frontier.

The optimum x* is read at the distinct measured compute values (`distinct_computes`), where the leaders
are found (`isocompute.fits.leaders`), the data of the law of x*(C); a dense log grid serves only the drawing.

A curve that is no candidate at a compute point is not thereby behind there. Where its run ended below that
compute (every n trained for the same number of steps, so the small n end early), or began above it (a large n
whose first evaluation comes late, above the compute of its first step), the run could have been measured
there and was not: it is *censored*. Its value there is the fitted sigmoid's, with the spread of the
bootstrap's refits (`censored_matrix`); the leaders treat it as a candidate that was not measured.

A run that a sweep's rule stopped with a judgement is different: the adaptive sweep stops an arm only where its
rule finds it behind over the rest of the range (its ceiling's band below the frontier's, left behind a rising
n*, above an identified plateau, or where a followed prior puts it), so beyond its stop it is *settled*
(`Settled`): no candidate, on that rule's stated assumptions, rather than censored. The fit is told so by the
sweep (`study_fit.fit_study(..., settled=...)`) and says so at every point it concerns; a run that ended for no
judgement (the grid ended, an error, a peer's rank at equal compute) stays censored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.fits.forms import FitFailure, Key, RewardFit

# Compute values less than this (in decades) above the first of their group are one compute point: runs of
# different B reach the same log-spaced target with steps of different size, so their checkpoints land a
# little apart. The width is bounded, never chained, so a table with every step evaluated keeps its range.
SAME_COMPUTE_DECADES = 0.05


@dataclass(frozen=True)
class Settled:
    """A run a sweep's rule stopped at its last point with a judgement that it is behind beyond it: the compute
    it reached (`compute`, in rollouts, the measure the sweep decides in: for the record), the rule's name and
    the reason in words, with the assumption the judgement rests on."""

    compute: float
    rule: str
    reason: str


@dataclass(frozen=True)
class Curve:
    """One curve's measured points (averaged over seeds) and its fit."""

    key: Key
    compute: np.ndarray
    reward: np.ndarray
    fit: RewardFit | FitFailure
    # The compute of the run's first optimizer step: the least compute at which it could have been measured.
    first_step: float = 0.0
    # Where a sweep's rule judged the run behind at its last point: beyond it no candidate (not censored).
    settled: Settled | None = None

    @property
    def measured_range(self) -> tuple[float, float]:
        return float(self.compute.min()), float(self.compute.max())

    def values(self, compute: np.ndarray, extrapolate: bool) -> tuple[np.ndarray, np.ndarray]:
        """The curve's reward at `compute` (NaN where it is no candidate) and where that is extrapolated."""
        low, high = self.measured_range
        slack = 10**SAME_COMPUTE_DECADES
        inside = (compute >= low / slack) & (compute <= high * slack)
        if isinstance(self.fit, RewardFit):
            reward = np.asarray(self.fit(compute), dtype=float)
            usable = inside | extrapolate
        else:
            order = np.argsort(self.compute)
            reward = np.interp(np.log10(compute), np.log10(self.compute[order]), self.reward[order])
            usable = inside
        return np.where(usable, reward, np.nan), usable & ~inside


    def censored(self, compute: np.ndarray) -> np.ndarray:
        """The curve's value where it is censored at `compute` (beyond its last point, or between its first
        step and its first point), NaN elsewhere. An unfitted curve has no value there to extrapolate: its
        value is the metric's ceiling, 1 (it may lead anywhere it is censored). Beyond the last point of a run
        a sweep's rule settled there (`settled`) it is not censored: no candidate."""
        low, high = self.measured_range
        slack = 10**SAME_COMPUTE_DECADES
        after = (compute > high * slack) & (self.settled is None)
        outside = after | ((compute < low / slack) & (compute >= self.first_step))
        reward = np.asarray(self.fit(compute), dtype=float) if isinstance(self.fit, RewardFit) else np.ones(len(compute))
        return np.where(outside, reward, np.nan)


def distinct_computes(values: Iterable[float], tolerance: float = SAME_COMPUTE_DECADES) -> np.ndarray:
    """The distinct compute values: sorted, a group holds the values less than `tolerance` decades above its
    first (its geometric mean stands for it), so checkpoints of runs with different B near one target are
    one point, and checkpoints 0.01-0.05 decades apart (one evaluation per step) never chain into one."""
    positive = np.sort([float(v) for v in values if v > 0])
    groups: list[list[float]] = []
    for value in positive:
        if groups and np.log10(value / groups[-1][0]) < tolerance:
            groups[-1].append(value)
        else:
            groups.append([value])
    # A group of one value is that value exactly (10 ** mean(log10) would make 512 of 512.0000000000001).
    return np.array([group[0] if np.ptp(group) == 0 else 10 ** np.mean(np.log10(group)) for group in groups])


def reward_matrix(curves: Sequence[Curve], compute: np.ndarray, extrapolate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Every curve's reward at `compute` (curves x points, NaN where it is no candidate), and where that is
    extrapolated."""
    pairs = [curve.values(np.asarray(compute, dtype=float), extrapolate) for curve in curves]
    if not pairs:
        return np.empty((0, len(compute))), np.empty((0, len(compute)), dtype=bool)
    return np.vstack([reward for reward, _ in pairs]), np.vstack([flag for _, flag in pairs])


def censored_matrix(curves: Sequence[Curve], compute: np.ndarray) -> np.ndarray:
    """Every curve's value where it is censored at `compute` (curves x points, NaN elsewhere: `Curve.censored`)."""
    if not curves:
        return np.empty((0, len(compute)))
    return np.vstack([curve.censored(np.asarray(compute, dtype=float)) for curve in curves])


def frontier(curves: Sequence[Curve], compute: np.ndarray, by: Sequence[str], extrapolate: bool = False) -> pd.DataFrame:
    """The best candidate at each compute value: its reward, its key, whether it is fitted and extrapolated.

    Ties go to the smallest key (the smaller n first), the cheaper choice per step. Compute values where no
    curve is a candidate are left out.
    """
    columns = ["compute", "reward", *by, "fitted", "extrapolated"]
    compute = np.asarray(compute, dtype=float)
    if not curves or not len(compute):
        return pd.DataFrame(columns=columns)
    ordered = sorted(curves, key=lambda curve: curve.key)
    rewards, outside = reward_matrix(ordered, compute, extrapolate)
    has = ~np.isnan(rewards).all(axis=0)
    best = np.argmax(np.where(np.isnan(rewards), -np.inf, rewards), axis=0)
    columns_at = np.arange(len(compute))
    table = pd.DataFrame({"compute": compute, "reward": rewards[best, columns_at]})
    for position, column in enumerate(by):
        table[column] = [ordered[index].key[position] for index in best]
    table["fitted"] = [isinstance(ordered[index].fit, RewardFit) for index in best]
    table["extrapolated"] = outside[best, columns_at]
    return table[has].reset_index(drop=True)

