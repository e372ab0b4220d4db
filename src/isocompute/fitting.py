"""Fits of the study: a monotonic sigmoid of reward in compute per curve, the compute-optimal frontier
over curves, and the sigmoid of log2 of the optimal hyperparameter in log10 compute.

Forms (../shared/notes/facts.md): R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) with B > 0 (ScaleRL's, monotone
by construction), fitted in log C; and log2 n* = L / (1 + exp(-k (log10 C - log10 C0))) + b (L < 0 gives
the inverse sigmoid of B_problem*). A curve is keyed by the hyperparameters in `by` (`n` at fixed
B_problem; `b_problem, n` when both vary). A fit that cannot be made is a `FitFailure` with its reason,
never dropped, so the figures can show it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

SIGMOID_PARAMS = 4
# Least-squares evaluations per start: a start that has not converged by then is abandoned (others remain).
MAX_EVALUATIONS = 300
Key = tuple[int, ...]


@dataclass(frozen=True)
class FitFailure:
    """Why a fit was not made (too few points, a flat curve, no convergence)."""

    reason: str


@dataclass(frozen=True)
class RewardFit:
    """R(C) = r0 + (a - r0) / (1 + (10**log10_c_mid / C)**b)."""

    r0: float
    a: float
    log10_c_mid: float
    b: float
    rmse: float
    num_points: int

    def __call__(self, compute: np.ndarray | float) -> np.ndarray:
        return reward_curve(np.log10(compute), self.r0, self.a, self.log10_c_mid, self.b)


@dataclass(frozen=True)
class OptimumFit:
    """log2 x* = L / (1 + exp(-k (log10 C - log10_c0))) + b, for x* = n* or B_problem*."""

    L: float
    k: float
    log10_c0: float
    b: float
    rmse: float
    num_points: int

    def __call__(self, compute: np.ndarray | float) -> np.ndarray:
        return 2 ** optimum_curve(np.log10(compute), self.L, self.k, self.log10_c0, self.b)


def reward_curve(log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float) -> np.ndarray:
    """The reward sigmoid written in log10 C, where it is fitted."""
    return r0 + (a - r0) / (1.0 + np.power(10.0, b * (log10_c_mid - np.asarray(log10_c, dtype=float))))


def optimum_curve(log10_c: np.ndarray, L: float, k: float, log10_c0: float, b: float) -> np.ndarray:
    """log2 of the optimal hyperparameter as a logistic function of log10 C."""
    return L / (1.0 + np.exp(-k * (np.asarray(log10_c, dtype=float) - log10_c0))) + b


def _best_fit(
    func: Any, x: np.ndarray, y: np.ndarray, starts: Sequence[Sequence[float]], bounds: tuple[list[float], list[float]]
) -> tuple[np.ndarray, float] | None:
    """Least squares from several starts; the parameters with the lowest error, or None if all fail."""
    best: tuple[np.ndarray, float] | None = None
    for start in starts:
        start = np.clip(start, bounds[0], bounds[1])
        try:
            params, _ = curve_fit(func, x, y, p0=start, bounds=bounds, max_nfev=MAX_EVALUATIONS, ftol=1e-6, xtol=1e-6)
        except (RuntimeError, ValueError):
            continue
        error = float(np.sqrt(np.mean((func(x, *params) - y) ** 2)))
        if best is None or error < best[1]:
            best = (params, error)
    return best


def record_breaking(compute: np.ndarray, reward: np.ndarray, bin_width: float) -> np.ndarray:
    """Mask of the points where the running maximum first enters a new reward bin (the blog's selection)."""
    compute, reward = np.asarray(compute, dtype=float), np.asarray(reward, dtype=float)
    keep = np.zeros(len(compute), dtype=bool)
    best_bin = -np.inf
    for index in np.argsort(compute, kind="stable"):
        current = np.floor(reward[index] / bin_width)
        if current > best_bin:
            keep[index] = True
            best_bin = current
    return keep


def fit_reward(
    compute: np.ndarray,
    reward: np.ndarray,
    min_compute: float = 0.0,
    r0: float | None = None,
    start: RewardFit | None = None,
) -> RewardFit | FitFailure:
    """Fit the reward sigmoid to points with compute above `min_compute` (earliest points may be noise).

    With `r0` given (the base model's reward, the curve's value as C -> 0) only A, C_mid and B are fitted:
    curves that have not saturated yet then cannot wander off to an implausible start. `start` (a
    previous fit) replaces the grid of starting points, which is how the bootstrap stays fast.
    """
    compute = np.asarray(compute, dtype=float)
    reward = np.asarray(reward, dtype=float)
    keep = (compute > 0) & (compute >= min_compute) & np.isfinite(reward)
    x, y = np.log10(compute[keep]), reward[keep]
    free = SIGMOID_PARAMS - (r0 is not None)
    if len(x) < free:
        return FitFailure(f"{len(x)} points above min_compute={min_compute:g}, need {free}")
    if np.ptp(y) < 1e-9:
        return FitFailure(f"flat curve: every point has reward {y[0]:.4g}")
    low, high = float(x.min()), float(x.max())
    if start is None:
        starts = [
            [float(y.min()), float(y.max()), mid, slope]
            for mid, slope in itertools.product(np.linspace(low, high, 3), (0.7, 2.0))
        ]
    else:
        starts = [[start.r0, start.a, start.log10_c_mid, start.b]]
    lower, upper = [0.0, 0.0, low - 3.0, 0.05], [1.0, 1.0, high + 3.0, 10.0]
    if r0 is None:
        best = _best_fit(reward_curve, x, y, starts, (lower, upper))
    else:
        anchored = lambda log10_c, a, mid, b: reward_curve(log10_c, r0, a, mid, b)  # noqa: E731
        best = _best_fit(anchored, x, y, [s[1:] for s in starts], (lower[1:], upper[1:]))
        best = None if best is None else (np.concatenate([[r0], best[0]]), best[1])
    if best is None:
        return FitFailure("least squares did not converge from any start")
    (fitted_r0, a, mid, b), error = best
    return RewardFit(float(fitted_r0), float(a), float(mid), float(b), error, len(x))


def frontier(fits: Mapping[Key, RewardFit], compute: np.ndarray, by: Sequence[str]) -> pd.DataFrame:
    """Upper envelope of the fitted curves at each compute value, and the curve's key attaining it.

    Ties go to the smallest key (the smaller n first), the cheaper choice per step.
    """
    keys = sorted(fits)
    if not keys or not len(compute):
        return pd.DataFrame(columns=["compute", "reward", *by])
    curves = np.vstack([fits[key](compute) for key in keys])
    best = np.argmax(curves, axis=0)
    table = pd.DataFrame({"compute": compute, "reward": curves[best, np.arange(len(compute))]})
    for position, column in enumerate(by):
        table[column] = [keys[index][position] for index in best]
    return table


def fit_optimum(compute: np.ndarray, optimum: np.ndarray, start: OptimumFit | None = None) -> OptimumFit | FitFailure:
    """Fit the logistic of log2 x* in log10 C to the frontier's optimal hyperparameter x*."""
    x = np.log10(np.asarray(compute, dtype=float))
    y = np.log2(np.asarray(optimum, dtype=float))
    if len(np.unique(y)) < 2:
        return FitFailure(f"the optimum is {int(2 ** y[0]) if len(y) else 'undefined'} over the whole range")
    low, high = float(x.min()), float(x.max())
    span = float(np.ptp(y))
    bounds = ([-4 * span - 1, 0.01, low - 2.0, -10.0], [4 * span + 1, 100.0, high + 2.0, 30.0])
    direction = 1.0 if y[-1] >= y[0] else -1.0
    if start is None:
        starts = [
            [direction * span, slope, mid, float(y.min() if direction > 0 else y.max())]
            for mid, slope in itertools.product(np.linspace(low, high, 5), (1.0, 5.0, 20.0))
        ]
    else:
        starts = [[start.L, start.k, start.log10_c0, start.b]]
    best = _best_fit(optimum_curve, x, y, starts, bounds)
    if best is None:
        return FitFailure("least squares did not converge from any start")
    (L, k, x0, b), error = best
    return OptimumFit(float(L), float(k), float(x0), float(b), error, len(x))


def curve_points(evals: pd.DataFrame, metric: str, compute: str, by: Sequence[str]) -> pd.DataFrame:
    """One point per curve and step: the metric and compute averaged over seeds."""
    values = [metric] if compute == "step" else [compute, metric]
    return evals.groupby([*by, "step"], as_index=False)[values].mean().sort_values([*by, compute], ignore_index=True)


@dataclass(frozen=True)
class StudyFit:
    """Everything fitted for one study and metric, kept as objects until written as JSON."""

    curves: dict[Key, RewardFit | FitFailure]
    envelope: pd.DataFrame
    optimum: dict[str, OptimumFit | FitFailure]


def fit_curves(
    points: pd.DataFrame,
    metric: str,
    compute: str,
    by: Sequence[str],
    min_compute: float,
    grid: np.ndarray,
    base_reward: float | None,
    points_rule: str,
    record_bin: float,
    start: StudyFit | None = None,
) -> StudyFit:
    """Per-curve fits, the frontier on `grid` and the optimum fit of every `by` column."""
    curves: dict[Key, RewardFit | FitFailure] = {}
    for key, group in points.groupby(list(by)):
        key = tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))
        c, r = group[compute].to_numpy(), group[metric].to_numpy()
        if points_rule == "record_breaking":
            mask = record_breaking(c, r, record_bin)
            c, r = c[mask], r[mask]
        previous = start.curves.get(key) if start else None
        curves[key] = fit_reward(c, r, min_compute, base_reward, previous if isinstance(previous, RewardFit) else None)
    good = {key: fit for key, fit in curves.items() if isinstance(fit, RewardFit)}
    envelope = frontier(good, grid, by)
    optimum: dict[str, OptimumFit | FitFailure] = {}
    for column in by:
        if not len(envelope):
            optimum[column] = FitFailure("no curve could be fitted")
            continue
        previous = start.optimum.get(column) if start else None
        optimum[column] = fit_optimum(
            envelope["compute"].to_numpy(),
            envelope[column].to_numpy(),
            previous if isinstance(previous, OptimumFit) else None,
        )
    return StudyFit(curves, envelope, optimum)


def compute_grid(points: pd.DataFrame, compute: str, min_compute: float, size: int) -> np.ndarray:
    """Log-spaced compute values over the measured range, where the frontier is evaluated."""
    measured = points.loc[(points[compute] > 0) & (points[compute] >= min_compute), compute]
    return np.geomspace(measured.min(), measured.max(), size) if len(measured) else np.array([])


def fit_study(
    evals: pd.DataFrame,
    metric: str,
    compute: str,
    by: Sequence[str] = ("n",),
    min_compute: float = 0.0,
    frontier_points: int = 60,
    base_reward: float | None = None,
    points: str = "all",
    record_bin: float = 0.01,
    resampled: Sequence[pd.DataFrame] = (),
) -> dict[str, Any]:
    """The study's fits as JSON: per-curve parameters, the frontier, the optimum's sigmoid at each compute.

    `resampled` are bootstrap replicas of `evals` (validation problems resampled); each is refitted from
    the point estimate and gives the 95 % intervals of every parameter and a band on the frontier.
    """
    by = list(by)
    table = curve_points(evals, metric, compute, by)
    grid = compute_grid(table, compute, min_compute, frontier_points)
    options = dict(metric=metric, compute=compute, by=by, min_compute=min_compute, grid=grid,
                   base_reward=base_reward, points_rule=points, record_bin=record_bin)  # fmt: skip
    point = fit_curves(table, **options)
    replicas = [fit_curves(curve_points(r, metric, compute, by), start=point, **options) for r in resampled]
    result: dict[str, Any] = {
        "metric": metric,
        "compute": compute,
        "by": by,
        "points": points,
        "min_compute": min_compute,
        "base_reward": base_reward,
        "bootstrap_resamples": len(replicas),
        "measured": table.to_dict(orient="records"),
        "curves": [
            {"key": dict(zip(by, key)), **_as_json(fit, [r.curves.get(key) for r in replicas])}
            for key, fit in point.curves.items()
        ],
        "frontier": point.envelope.to_dict(orient="records"),
        "optimum": {
            column: _as_json(fit, [r.optimum[column] for r in replicas], samples=True)
            for column, fit in point.optimum.items()
        },
        "optimum_at_max_compute": (
            {column: int(point.envelope[column].iloc[-1]) for column in by} if len(point.envelope) else None
        ),
    }
    if replicas and len(point.envelope):
        bands = np.vstack([_envelope_rewards(r, grid) for r in replicas])
        for row, low, high in zip(result["frontier"], *np.nanpercentile(bands, [2.5, 97.5], axis=0)):
            row["reward_low"], row["reward_high"] = float(low), float(high)
    return result


def _envelope_rewards(replica: StudyFit, grid: np.ndarray) -> np.ndarray:
    """A replica's frontier reward on the point estimate's grid (NaN where it has none)."""
    if not len(replica.envelope):
        return np.full(len(grid), np.nan)
    return replica.envelope["reward"].to_numpy()


def _as_json(
    fit: RewardFit | OptimumFit | FitFailure,
    replicas: Sequence[RewardFit | OptimumFit | FitFailure | None],
    samples: bool = False,
) -> dict[str, Any]:
    """A fit as JSON with `ok`; with replicas, 95 % intervals per parameter (and the samples if asked)."""
    entry: dict[str, Any] = {"ok": not isinstance(fit, FitFailure), **asdict(fit)}
    made = [r for r in replicas if r is not None and not isinstance(r, FitFailure)]
    if isinstance(fit, FitFailure) or not made:
        return entry
    names = [n for n in asdict(fit) if n not in ("rmse", "num_points")]
    values = np.array([[getattr(r, n) for n in names] for r in made])
    low, high = np.percentile(values, [2.5, 97.5], axis=0)
    entry["intervals"] = {n: [float(lo), float(hi)] for n, lo, hi in zip(names, low, high)}
    entry["replicas_fitted"] = len(made)
    if samples:
        entry["samples"] = values.tolist()
    return entry


def reward_fit_from_json(entry: Mapping[str, Any]) -> RewardFit | FitFailure:
    """Inverse of the JSON form of a curve's fit."""
    return _from_json(RewardFit, entry)


def optimum_fit_from_json(entry: Mapping[str, Any]) -> OptimumFit | FitFailure:
    """Inverse of the JSON form of an optimum's fit."""
    return _from_json(OptimumFit, entry)


def _from_json(kind: type, entry: Mapping[str, Any]) -> Any:
    if not entry["ok"]:
        return FitFailure(entry["reason"])
    return kind(**{name: entry[name] for name in kind.__dataclass_fields__})
