"""One study's fitted objects for one metric and compute measure: curves, frontier, the optimum and the
curves' rewards where it is read.

`fit_curves` is the unit every consumer refits: the point estimate, each bootstrap replica (started from
the point estimate) and the truncated data of the held-out check. The leaders and the law of x*(C) are
found from its rewards (`isocompute.fits.leaders`, `isocompute.fits.law`); `isocompute.fits.study_fit`
turns the results into the JSON that figures and the recommendation read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fits.forms import DECLINE_LEVEL, Key, RewardFit, fit_reward, record_breaking
from isocompute.fits.frontier import Curve, Settled, censored_matrix, frontier, reward_matrix
from isocompute.fits.leaders import DEFAULT_TOLERANCE, CurveRewards


@dataclass(frozen=True)
class FitOptions:
    """How one study's curves are fitted (the `fits` block of the config, or `isocompute fit`'s flags)."""

    metric: str
    compute: str
    by: tuple[str, ...] = ("n",)
    base_reward: float | None = None
    points: str = "all"
    record_bin: float = 0.01
    extrapolate: bool = False
    tolerance: float = DEFAULT_TOLERANCE

    @classmethod
    def from_config(
        cls, fits: Mapping[str, Any], metric: str, compute: str, by: Sequence[str], base_reward: float | None = None
    ) -> FitOptions:
        """The options of the config's `fits:` block for one metric and compute measure (a `fits:` block
        written before `tolerance` existed gets the default)."""
        return cls(
            metric=metric,
            compute=compute,
            by=tuple(by),
            base_reward=base_reward,
            points=fits["points"],
            record_bin=fits["record_bin"],
            extrapolate=fits["extrapolate"],
            tolerance=fits.get("tolerance", DEFAULT_TOLERANCE),
        )


@dataclass(frozen=True)
class StudyFit:
    """Everything fitted for one study and metric, kept as objects until written as JSON.

    `envelope` is the frontier on the dense drawing grid; `optimum` the frontier at the distinct measured
    compute values that have one, `rewards` every curve's reward there (curves x points, NaN where a curve is
    no candidate) and `censored` its value where it is censored (`frontier.Curve.censored`, NaN elsewhere),
    from which the leaders and the law of x*(C) are found.
    """

    curves: list[Curve]
    envelope: pd.DataFrame
    optimum: pd.DataFrame
    rewards: np.ndarray
    censored: np.ndarray

    @property
    def keys(self) -> list[Key]:
        return [curve.key for curve in self.curves]

    def curve_rewards(self, noise: np.ndarray | None = None) -> CurveRewards:
        """The rewards at the optimum's points with each curve's anchor (its fitted R0, or its first measured
        point) and the noise of one measured point (`noise`, else the scatter about its fit)."""
        anchors, scatter = [], []
        for curve in self.curves:
            order = np.argsort(curve.compute)
            if isinstance(curve.fit, RewardFit):
                anchors.append(curve.fit.r0)
                scatter.append(curve.fit.rmse)
            else:
                anchors.append(float(curve.reward[order][0]))
                steps = np.diff(curve.reward[order])
                scatter.append(float(np.std(steps) / np.sqrt(2)) if len(steps) > 1 else 0.0)
        return CurveRewards(
            self.keys, self.rewards, np.array(anchors), np.array(scatter) if noise is None else noise, self.censored,
            [curve.measured_range for curve in self.curves],
        )


def curve_points(evals: pd.DataFrame, metric: str, compute: str, by: Sequence[str]) -> pd.DataFrame:
    """One point per curve and step: the metric and compute averaged over seeds."""
    values = [metric] if compute == "step" else [compute, metric]
    return evals.groupby([*by, "step"], as_index=False)[values].mean().sort_values([*by, compute], ignore_index=True)


def fit_curves(
    table: pd.DataFrame,
    options: FitOptions,
    grid: np.ndarray,
    at: np.ndarray,
    start: StudyFit | None = None,
    settled: Mapping[Key, Settled] | None = None,
) -> StudyFit:
    """Per-curve fits, the frontier on `grid` and at `at`, and the curves' rewards where that has a frontier;
    a curve in `settled` is no candidate beyond where a sweep's rule stopped it (`frontier.Settled`)."""
    settled = settled or {}
    by = list(options.by)
    previous = {curve.key: curve.fit for curve in start.curves} if start else {}
    curves = []
    groups = table.groupby(by)
    for key, group in groups:
        key = tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))
        c, r = group[options.compute].to_numpy(dtype=float), group[options.metric].to_numpy(dtype=float)
        used = record_breaking(c, r, options.record_bin) if options.points == "record_breaking" else slice(None)
        earlier = previous.get(key)
        fit = fit_reward(c[used], r[used], r0=options.base_reward, start=earlier if isinstance(earlier, RewardFit) else None,
                         decline_level=DECLINE_LEVEL / groups.ngroups)  # fmt: skip
        first = int(np.argmin(c))
        steps = group["step"].to_numpy(dtype=float)
        first_step = float(c[first] / steps[first]) if steps[first] > 0 else float(c[first])
        curves.append(Curve(key, c, r, fit, first_step, settled.get(key)))
    envelope = frontier(curves, grid, by, options.extrapolate)
    optimum = frontier(curves, at, by)
    points = optimum["compute"].to_numpy(dtype=float)
    rewards, _ = reward_matrix(curves, points)
    return StudyFit(curves, envelope, optimum, rewards, censored_matrix(curves, points))


def json_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON records of plain Python values, NaN as None."""
    def plain(value: Any) -> Any:
        value = value.item() if hasattr(value, "item") else value
        return None if isinstance(value, float) and np.isnan(value) else value

    return [{key: plain(value) for key, value in row.items()} for row in table.to_dict(orient="records")]
