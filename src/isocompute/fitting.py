"""Fits of the study: a monotonic sigmoid of reward in compute per n, the compute-optimal frontier over n,
and the sigmoid of log2 n* in log10 C.

Forms (../shared/notes/facts.md): R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) with B > 0 (ScaleRL's, monotone
by construction), fitted in log C; and log2 n* = L / (1 + exp(-k (log10 C - log10 C0))) + b. A fit that
cannot be made is returned as a `FitFailure` with its reason, never dropped, so figures can show it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

SIGMOID_PARAMS = 4


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
class NStarFit:
    """log2 n* = L / (1 + exp(-k (log10 C - log10_c0))) + b."""

    L: float
    k: float
    log10_c0: float
    b: float
    rmse: float
    num_points: int

    def __call__(self, compute: np.ndarray | float) -> np.ndarray:
        return 2 ** nstar_curve(np.log10(compute), self.L, self.k, self.log10_c0, self.b)


def reward_curve(log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float) -> np.ndarray:
    """The reward sigmoid written in log10 C, where it is fitted."""
    return r0 + (a - r0) / (1.0 + np.power(10.0, b * (log10_c_mid - np.asarray(log10_c, dtype=float))))


def nstar_curve(log10_c: np.ndarray, L: float, k: float, log10_c0: float, b: float) -> np.ndarray:
    """log2 n* as a logistic function of log10 C."""
    return L / (1.0 + np.exp(-k * (np.asarray(log10_c, dtype=float) - log10_c0))) + b


def _best_fit(
    func: Any, x: np.ndarray, y: np.ndarray, starts: list[list[float]], bounds: tuple[list[float], list[float]]
) -> tuple[np.ndarray, float] | None:
    """Least squares from several starts; the parameters with the lowest error, or None if all fail."""
    best: tuple[np.ndarray, float] | None = None
    for start in starts:
        start = np.clip(start, bounds[0], bounds[1])
        try:
            params, _ = curve_fit(func, x, y, p0=start, bounds=bounds, maxfev=20000)
        except (RuntimeError, ValueError):
            continue
        error = float(np.sqrt(np.mean((func(x, *params) - y) ** 2)))
        if best is None or error < best[1]:
            best = (params, error)
    return best


def fit_reward(compute: np.ndarray, reward: np.ndarray, min_compute: float = 0.0) -> RewardFit | FitFailure:
    """Fit the reward sigmoid to points with compute above `min_compute` (earliest points may be noise)."""
    compute = np.asarray(compute, dtype=float)
    reward = np.asarray(reward, dtype=float)
    keep = (compute > 0) & (compute >= min_compute) & np.isfinite(reward)
    x, y = np.log10(compute[keep]), reward[keep]
    if len(x) < SIGMOID_PARAMS:
        return FitFailure(f"{len(x)} points above min_compute={min_compute:g}, need {SIGMOID_PARAMS}")
    if np.ptp(y) < 1e-9:
        return FitFailure(f"flat curve: every point has reward {y[0]:.4g}")
    low, high = float(x.min()), float(x.max())
    bounds = ([0.0, 0.0, low - 3.0, 0.05], [1.0, 1.0, high + 3.0, 20.0])
    starts = [
        [float(y.min()), float(y.max()), mid, slope]
        for mid, slope in itertools.product(np.linspace(low, high, 4), (0.5, 1.0, 3.0))
    ]
    best = _best_fit(reward_curve, x, y, starts, bounds)
    if best is None:
        return FitFailure("least squares did not converge from any start")
    (r0, a, mid, b), error = best
    return RewardFit(float(r0), float(a), float(mid), float(b), error, len(x))


def frontier(fits: Mapping[int, RewardFit], compute: np.ndarray) -> pd.DataFrame:
    """Upper envelope of the fitted curves at each compute value, and the n attaining it (n*).

    Ties go to the smaller n, the cheaper choice per step.
    """
    values = sorted(fits)
    if not values:
        return pd.DataFrame(columns=["compute", "reward", "n_star"])
    curves = np.vstack([fits[n](compute) for n in values])
    best = np.argmax(curves, axis=0)
    return pd.DataFrame(
        {"compute": compute, "reward": curves[best, np.arange(len(compute))], "n_star": np.asarray(values)[best]}
    )


def fit_nstar(compute: np.ndarray, n_star: np.ndarray) -> NStarFit | FitFailure:
    """Fit the logistic of log2 n* in log10 C to the frontier's n*."""
    x = np.log10(np.asarray(compute, dtype=float))
    y = np.log2(np.asarray(n_star, dtype=float))
    if len(np.unique(y)) < 2:
        return FitFailure(f"n* is {int(2 ** y[0]) if len(y) else 'undefined'} over the whole compute range")
    low, high = float(x.min()), float(x.max())
    span = float(np.ptp(y))
    bounds = ([-4 * span - 1, 0.01, low - 2.0, -10.0], [4 * span + 1, 100.0, high + 2.0, 20.0])
    direction = 1.0 if y[-1] >= y[0] else -1.0
    starts = [
        [direction * span, slope, mid, float(y.min() if direction > 0 else y.max())]
        for mid, slope in itertools.product(np.linspace(low, high, 5), (1.0, 5.0, 20.0))
    ]
    best = _best_fit(nstar_curve, x, y, starts, bounds)
    if best is None:
        return FitFailure("least squares did not converge from any start")
    (L, k, x0, b), error = best
    return NStarFit(float(L), float(k), float(x0), float(b), error, len(x))


def curve_points(evals: pd.DataFrame, metric: str, compute: str) -> pd.DataFrame:
    """One point per (n, step): the metric and compute averaged over seeds."""
    return evals.groupby(["n", "step"], as_index=False)[[compute, metric]].mean().sort_values(["n", compute])


def fit_study(
    evals: pd.DataFrame, metric: str, compute: str, min_compute: float, frontier_points: int
) -> dict[str, Any]:
    """Per-n reward fits, the frontier on a log grid over the measured compute, and the n*(C) fit, as JSON."""
    points = curve_points(evals, metric, compute)
    fits: dict[int, RewardFit | FitFailure] = {
        int(n): fit_reward(group[compute].to_numpy(), group[metric].to_numpy(), min_compute)
        for n, group in points.groupby("n")
    }
    good = {n: fit for n, fit in fits.items() if isinstance(fit, RewardFit)}
    measured = points.loc[points[compute] >= max(min_compute, 1e-12), compute]
    grid = np.geomspace(measured.min(), measured.max(), frontier_points) if len(measured) else np.array([])
    envelope = frontier(good, grid)
    nstar = fit_nstar(envelope["compute"].to_numpy(), envelope["n_star"].to_numpy()) if len(envelope) else FitFailure("no curve could be fitted")
    return {
        "metric": metric,
        "compute": compute,
        "min_compute": min_compute,
        "curves": {str(n): _as_json(fit) for n, fit in fits.items()},
        "frontier": envelope.to_dict(orient="records"),
        "nstar_fit": _as_json(nstar),
        "nstar_at_max_compute": int(envelope["n_star"].iloc[-1]) if len(envelope) else None,
    }


def _as_json(fit: RewardFit | NStarFit | FitFailure) -> dict[str, Any]:
    """A fit as a JSON object with `ok` saying whether it was made."""
    return {"ok": not isinstance(fit, FitFailure), **asdict(fit)}


def reward_fit_from_json(entry: Mapping[str, Any]) -> RewardFit | FitFailure:
    """Inverse of the JSON form of a per-n fit."""
    fields = {k: v for k, v in entry.items() if k != "ok"}
    return RewardFit(**fields) if entry["ok"] else FitFailure(**fields)


def nstar_fit_from_json(entry: Mapping[str, Any]) -> NStarFit | FitFailure:
    """Inverse of the JSON form of the n*(C) fit."""
    fields = {k: v for k, v in entry.items() if k != "ok"}
    return NStarFit(**fields) if entry["ok"] else FitFailure(**fields)

