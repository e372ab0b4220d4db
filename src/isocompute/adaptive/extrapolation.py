"""An arm's reward at compute it has not reached, predicted from its measured part, with an interval.

The adaptive rule's bound (`decisions.ceiling_bound`) needs an upper bound on an arm's future reward, and
an unsaturated curve's ceiling is not identified by its own data: its bound is the metric's maximum, so on
close curves nearly every arm runs to C_max. ScaleRL instead fits the sigmoid to the first part of a run and
reads off where it goes. Here an arm's measured points are fitted by the study's sigmoid (`forms.fit_reward`,
anchored at the base model's value where the study anchors), with its slope B held at the median of the
other arms' identified slopes (`shared_slope`: the arms of one study share a recipe, and on the paper's
curves and the known truth their slopes are alike, while ceilings and midpoints move with n), and the
interval is the spread of the predictions of its residual-bootstrap refits (`bootstrap.residual_replicas`,
the replicas `isocompute fit` draws without counts). Where no other arm's slope is identified the arm's
own slope is fitted. The interval is that of a new evaluation at the forecast compute: each refit's value plus
a residual of the fit drawn with replacement. The refits' spread alone holds only the fit's sampling noise, not
the form's misfit nor a slope the arm does not share, and covered too little of the truth (setting 1 of the log).

The interval is trusted only as far as it was measured to cover the truth: `tests/benchmark_extrapolation.py`
measures coverage against the fraction of the run seen, and docs/log/adaptive-extrapolation.md holds the
decision and the numbers. An arm with fewer than `MIN_POINTS` measured points is not extrapolated. The
forecast fits the sigmoid alone (`decline_level=0`), never a decline after a peak: that is the form its
intervals were calibrated with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.fits.bootstrap import residual_replicas
from isocompute.fits.forms import FitFailure, RewardFit, fit_reward
from isocompute.fits.frontier import Curve
from isocompute.fits.leaders import RESOLVED_SHARE

# The interval's level: two-sided, so each edge is exceeded by the truth in (1 - LEVEL) / 2 of the draws if calibrated.
LEVEL = 0.9
# What the rule uses (`decisions.below_by_forecast`): the mode and the least fraction of an arm's run (in linear
# compute) from which its forecast was calibrated on every known-truth family (docs/log/adaptive-extrapolation.md).
SHARE = False
SEEN_FROM = 1 / 2
# Fewer measured points than this and the residuals (all the bootstrap draws from) say nothing about the noise.
MIN_POINTS = 5


@dataclass(frozen=True)
class Forecast:
    """An arm's predicted reward at compute values it has not reached: the fit's values and the interval
    (`LEVEL`) of a new evaluation there, with the slope it held (None where it fitted its own)."""

    n: int
    compute: np.ndarray
    reward: np.ndarray
    low: np.ndarray
    high: np.ndarray
    slope: float | None

    @property
    def upper(self) -> float:
        """The most the arm is predicted to reach at these compute values (the interval's upper edge)."""
        return float(np.max(self.high))


def shared_slope(fits: Mapping[int, RewardFit | FitFailure], n: int) -> float | None:
    """The slope B the other arms share: the median of the slopes of the arms other than `n` whose fit
    identifies every parameter (no flags: bent over inside its data), None where there is none."""
    slopes = [fit.b for other, fit in fits.items() if other != n and isinstance(fit, RewardFit) and not fit.flags]
    return float(np.median(slopes)) if slopes else None


def forecast(
    n: int,
    compute: np.ndarray,
    reward: np.ndarray,
    at: np.ndarray,
    r0: float | None,
    slope: float | None,
    resamples: int,
    seed: int,
    checked: bool = False,
) -> Forecast | FitFailure:
    """Arm `n`'s reward at the compute values `at` from its measured points (`compute`, `reward`), with
    the interval (`LEVEL`) of a new evaluation from `resamples` residual-bootstrap refits (drawn from `seed`), each plus a
    residual; `slope` held where given.
    With `checked` (setting 3 of docs/log/adaptive-extrapolation.md, measured, not read by the rule) the interval is
    instead the curve's (the refits' alone) widened on each side by the arm's own earlier miss (`earlier_miss`) per
    doubling beyond its last measured compute (at least one).
    A failure where the arm has fewer than `MIN_POINTS` points, its fit fails, or fewer than
    `RESOLVED_SHARE` of the refits are made; with `checked`, also where its earlier miss cannot be measured."""
    compute, reward, at = (np.asarray(v, dtype=float) for v in (compute, reward, at))
    if len(compute) < MIN_POINTS:
        return FitFailure("too_few_points", f"n = {n}: {len(compute)} measured points, fewer than {MIN_POINTS} to extrapolate from")
    fit = fit_reward(compute, reward, r0=r0, slope=slope, decline_level=0.0)
    if isinstance(fit, FitFailure):
        return fit
    table = pd.DataFrame({"n": n, "compute": compute, "reward": reward})
    replicas = residual_replicas(table, [Curve((n,), compute, reward, fit)], ("n",), "compute", "reward", resamples, seed)
    refits = [fit_reward(compute, r.evals["reward"].to_numpy(), r0=r0, start=fit, slope=slope) for r in replicas]
    made = [refit for refit in refits if isinstance(refit, RewardFit)]
    if len(made) < RESOLVED_SHARE * resamples:
        return FitFailure("no_band", f"n = {n}: only {len(made)} of {resamples} bootstrap refits made a fit")
    if checked:
        miss = earlier_miss(n, compute, reward, fit, r0, slope)
        if isinstance(miss, FitFailure):
            return miss
        low, high = np.percentile(np.vstack([refit(at) for refit in made]), [50 * (1 - LEVEL), 50 * (1 + LEVEL)], axis=0)
        widen = miss * np.maximum(np.log2(at / compute.max()), 1.0)
        return Forecast(n, at, np.asarray(fit(at), dtype=float), low - widen, high + widen, slope)
    # What a new evaluation at `at` would read: each refit's value plus a residual of the fit, drawn with
    # replacement. The refits' spread alone (setting 1 of the log) covered 60-85 % of the truths at 90 %:
    # it misses the form's misfit, which the points' scatter about the fit bounds from above.
    noise = np.random.default_rng([seed, 11]).choice(reward - fit(compute), size=(len(made), len(at)))
    values = np.vstack([refit(at) for refit in made]) + noise
    low, high = np.percentile(values, [50 * (1 - LEVEL), 50 * (1 + LEVEL)], axis=0)
    return Forecast(n, at, np.asarray(fit(at), dtype=float), low, high, slope)


def earlier_miss(
    n: int, compute: np.ndarray, reward: np.ndarray, fit: RewardFit, r0: float | None, slope: float | None
) -> float | FitFailure:
    """How far the form missed on this arm one doubling ahead: its points up to half its last measured compute,
    fitted alone, against the fit of all its points at that last compute. The misfit the refits' spread leaves
    out, measured where the arm then went (setting 3 of docs/log/adaptive-extrapolation.md)."""
    last = float(compute.max())
    early = compute <= last / 2 * (1 + 1e-9)
    if early.sum() < MIN_POINTS:
        return FitFailure("too_few_points", f"n = {n}: {int(early.sum())} points up to half its compute, fewer than "
                          f"{MIN_POINTS} to check its forecast on")  # fmt: skip
    first = fit_reward(compute[early], reward[early], r0=r0, slope=slope, decline_level=0.0)
    if isinstance(first, FitFailure):
        return first
    return float(abs(first(np.array([last]))[0] - fit(np.array([last]))[0]))


def forecast_arms(
    measured: pd.DataFrame,
    metric: str,
    compute: str,
    at: Mapping[int, Sequence[float]],
    r0: float | None,
    resamples: int,
    seed: int,
    share: bool = True,
    checked: bool = False,
) -> dict[int, Forecast | FitFailure]:
    """Every arm of `at` forecast at its compute values there, from the measured points of a study (one row
    per arm and step, `measured`'s `metric` against `compute`), each with the slope the other arms share
    (`shared_slope`, from each arm's own fit of the same points) unless `share` is off; `checked` as `forecast`."""
    points = {int(n): group.sort_values(compute) for n, group in measured.groupby("n")}
    own = {n: fit_reward(group[compute].to_numpy(), group[metric].to_numpy(), r0=r0, decline_level=0.0)
           for n, group in points.items()}  # fmt: skip
    return {
        n: forecast(
            n, points[n][compute].to_numpy(), points[n][metric].to_numpy(), np.asarray(targets, dtype=float), r0,
            shared_slope(own, n) if share else None, resamples, seed, checked,
        ) if n in points else FitFailure("not_measured", f"n = {n}: no measured point")
        for n, targets in at.items()
    }  # fmt: skip
