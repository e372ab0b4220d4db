"""One study's fitted objects for one metric and compute measure: curves, frontier, optimum and its law.

`fit_curves` is the unit every consumer refits: the point estimate, each bootstrap replica (started from
the point estimate) and the truncated data of the held-out check. `isocompute.fits.fits_json` turns the
results into the JSON that figures and the recommendation read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fits.forms import FitFailure, OptimumFit, RewardFit, fit_reward, record_breaking
from isocompute.fits.frontier import Curve, frontier
from isocompute.fits.law import fit_law


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


@dataclass(frozen=True)
class StudyFit:
    """Everything fitted for one study and metric, kept as objects until written as JSON.

    `envelope` is the frontier on the dense drawing grid; `optimum` the frontier at the distinct measured
    compute values, the data of the `laws` of x*(C), each fitted to x* at every one of those points with no
    test of what they identify (the bootstrap judges that, `isocompute.fits.law`).
    """

    curves: list[Curve]
    envelope: pd.DataFrame
    optimum: pd.DataFrame
    laws: dict[str, OptimumFit | FitFailure]


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
) -> StudyFit:
    """Per-curve fits, the frontier on `grid` and at `at`, and the law of every `by` column."""
    by = list(options.by)
    previous = {curve.key: curve.fit for curve in start.curves} if start else {}
    curves = []
    for key, group in table.groupby(by):
        key = tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))
        c, r = group[options.compute].to_numpy(dtype=float), group[options.metric].to_numpy(dtype=float)
        used = record_breaking(c, r, options.record_bin) if options.points == "record_breaking" else slice(None)
        earlier = previous.get(key)
        fit = fit_reward(c[used], r[used], r0=options.base_reward, start=earlier if isinstance(earlier, RewardFit) else None)
        curves.append(Curve(key, c, r, fit))
    envelope = frontier(curves, grid, by, options.extrapolate)
    optimum = frontier(curves, at, by)
    laws: dict[str, OptimumFit | FitFailure] = {}
    for column in by:
        laws[column] = fit_law(optimum["compute"].to_numpy(), optimum[column].to_numpy(dtype=float))
    return StudyFit(curves, envelope, optimum, laws)


def json_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON records of plain Python values, NaN as None."""
    def plain(value: Any) -> Any:
        value = value.item() if hasattr(value, "item") else value
        return None if isinstance(value, float) and np.isnan(value) else value

    return [{key: plain(value) for key, value in row.items()} for row in table.to_dict(orient="records")]
