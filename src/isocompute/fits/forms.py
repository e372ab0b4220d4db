"""The two fitted forms of the study, and what their data identify.

Forms (docs/reference/recipe.md): per curve, R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) with B > 0
(ScaleRL's, monotone by construction), fitted in log C; for the optimum along the frontier,
log2 x* = L / (1 + exp(-k (log10 C - log10 C0))) + b (x* = n* or B_problem*; L < 0 is a falling optimum).

A least-squares optimizer always returns numbers, so every fit here also says whether its data determine
them. A curve fit is made only with more points than free parameters, and carries `flags` for parameters
the data do not pin down (an asymptote above the last point, a midpoint outside the data, a parameter at
its bound); it stays usable inside its measured range. What the data identify of a law of x*(C) is judged
from the bootstrap replicas of the whole estimator (`isocompute.fits.law`). A fit not made is a `FitFailure`
whose `reason` a person can act on and whose `kind` the bootstrap counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.special import expit

SIGMOID_PARAMS = 4
# Least-squares evaluations per start: a start that has not converged by then is abandoned (others remain).
MAX_EVALUATIONS = 300
# A curve whose last point holds less than this share of its fitted gain (A - R0) has not saturated.
SATURATED_SHARE = 0.9
# A parameter within this share of its bounds' span from a bound is "at its bound".
AT_BOUND = 0.01
Key = tuple[int, ...]


@dataclass(frozen=True)
class FitFailure:
    """Why a fit was not made or is not reported: `kind` is a short category, `reason` the full sentence."""

    kind: str
    reason: str


@dataclass(frozen=True)
class RewardFit:
    """R(C) = r0 + (a - r0) / (1 + (10**log10_c_mid / C)**b), with what its data leave undetermined."""

    r0: float
    a: float
    log10_c_mid: float
    b: float
    rmse: float
    num_points: int
    flags: tuple[str, ...] = ()
    # r0 was fixed at the base model's value rather than fitted.
    anchored: bool = False

    @property
    def free_parameters(self) -> int:
        return SIGMOID_PARAMS - self.anchored

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

    @property
    def direction(self) -> str:
        return "rising" if self.L > 0 else "falling"


Fit = RewardFit | OptimumFit | FitFailure


def reward_curve(log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float) -> np.ndarray:
    """The reward sigmoid written in log10 C, where it is fitted."""
    return r0 + (a - r0) / (1.0 + np.power(10.0, b * (log10_c_mid - np.asarray(log10_c, dtype=float))))


def optimum_curve(log10_c: np.ndarray, L: float, k: float, log10_c0: float, b: float) -> np.ndarray:
    """log2 of the optimal hyperparameter as a logistic function of log10 C."""
    return L / (1.0 + np.exp(-k * (np.asarray(log10_c, dtype=float) - log10_c0))) + b


Bounds = tuple[list[float], list[float]]


def best_fit(
    func: Any,
    x: np.ndarray,
    y: np.ndarray,
    starts: Sequence[Sequence[float]],
    bounds: Bounds,
    jacobian: Any = None,
) -> tuple[np.ndarray, float] | None:
    """Least squares from several starts; the parameters with the lowest rms error, or None if none is finite.
    `jacobian(x, *params)` (points x parameters), where given, replaces finite differences: the bootstrap
    refits every curve of every replica, and that is most of a study's fitting time.

    A start that runs out of evaluations keeps where it got to: a parameter the data do not determine
    runs towards its bound, which the callers test, rather than making the fit vanish.
    """
    jac = "2-point" if jacobian is None else (lambda p: jacobian(x, *p))
    best: tuple[np.ndarray, float] | None = None
    for start in starts:
        start = np.clip(start, bounds[0], bounds[1])
        result = least_squares(
            lambda p: func(x, *p) - y, start, jac=jac, bounds=bounds, max_nfev=MAX_EVALUATIONS, ftol=1e-6, xtol=1e-6
        )
        error = float(np.sqrt(np.mean(result.fun**2)))
        if np.isfinite(error) and (best is None or error < best[1]):
            best = (result.x, error)
    return best


def reward_jacobian(log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float) -> np.ndarray:
    """d `reward_curve` / d (r0, a, log10_c_mid, b), one row per point."""
    x = np.asarray(log10_c, dtype=float)
    s = expit(b * np.log(10.0) * (x - log10_c_mid))
    slope = (a - r0) * s * (1.0 - s) * np.log(10.0)
    return np.stack([1.0 - s, s, -slope * b, slope * (x - log10_c_mid)], axis=1)


def at_bounds(names: Sequence[str], values: Sequence[float], bounds: Bounds) -> list[tuple[str, str]]:
    """The parameters that ended at (within `AT_BOUND` of the span of) a bound, with "lower" or "upper"."""
    stuck = []
    for name, value, low, high in zip(names, values, *bounds):
        if value - low <= AT_BOUND * (high - low):
            stuck.append((name, "lower"))
        elif high - value <= AT_BOUND * (high - low):
            stuck.append((name, "upper"))
    return stuck


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
    r0: float | None = None,
    start: RewardFit | None = None,
    slope: float | None = None,
) -> RewardFit | FitFailure:
    """Fit the reward sigmoid to a curve's points (the study drops points below `fits.min_compute` before).

    With `r0` given (the base model's reward, the curve's value as C -> 0) only A, C_mid and B are fitted;
    with `slope` given B is held at it too (the slope the other arms share, `adaptive.extrapolation`).
    A fit needs more points than free parameters: with as many, least squares interpolates exactly and
    the "fit" says nothing. `start` (a previous fit) replaces the grid of starting points, which is how the
    bootstrap stays fast.
    """
    compute = np.asarray(compute, dtype=float)
    reward = np.asarray(reward, dtype=float)
    keep = (compute > 0) & np.isfinite(reward)
    x, y = np.log10(compute[keep]), reward[keep]
    fixed = {index: value for index, value in ((0, r0), (3, slope)) if value is not None}
    free = SIGMOID_PARAMS - len(fixed)
    if len(x) <= free:
        return FitFailure(
            "too_few_points",
            f"{len(x)} points for {free} free parameters: an exact "
            f"interpolation, not a fit; need {free + 1}",
        )
    if np.ptp(y) < 1e-9:
        return FitFailure("flat", f"flat curve: every point has reward {y[0]:.4g}")
    low, high = float(x.min()), float(x.max())
    if start is None:
        starts = [
            [float(y.min()), float(y.max()), mid, b]
            for mid, b in itertools.product(np.linspace(low, high, 3), (0.7, 2.0))
        ]
    else:
        starts = [[start.r0, start.a, start.log10_c_mid, start.b]]
    bounds = ([0.0, 0.0, low - 3.0, 0.05], [1.0, 1.0, high + 3.0, 10.0])
    chosen = [index for index in range(SIGMOID_PARAMS) if index not in fixed]
    # The fixed parameters are the first (R0) and the last (B), so the free ones are a slice of the Jacobian.
    columns = slice(chosen[0], chosen[-1] + 1)

    def every(params: Sequence[float]) -> list[float]:
        values = dict(fixed)
        values.update(zip(chosen, params))
        return [values[index] for index in range(SIGMOID_PARAMS)]

    best = best_fit(
        lambda log10_c, *p: reward_curve(log10_c, *every(p)),
        x,
        y,
        [[s[i] for i in chosen] for s in starts],
        ([bounds[0][i] for i in chosen], [bounds[1][i] for i in chosen]),
        lambda log10_c, *p: reward_jacobian(log10_c, *every(p))[:, columns],
    )
    if best is None:
        return FitFailure("no_convergence", "least squares did not converge from any start")
    params, error = best
    fit = RewardFit(*(float(v) for v in every(params)), rmse=error, num_points=len(x), anchored=r0 is not None)
    return RewardFit(**{**asdict(fit), "flags": _reward_flags(fit, (low, high), bounds, chosen)})


def _reward_flags(fit: RewardFit, log10_range: tuple[float, float], bounds: Bounds, free: Sequence[int]) -> tuple[str, ...]:
    """What the curve's data leave undetermined; the fit stays usable inside its measured range."""
    flags = []
    gain = fit.a - fit.r0
    reached = fit(10 ** log10_range[1]) - fit.r0
    if abs(gain) > 1e-9 and reached / gain < SATURATED_SHARE:
        flags.append(f"A not identified: curve not saturated (its last point has {reached / gain:.0%} of the fitted gain)")
    if not log10_range[0] <= fit.log10_c_mid <= log10_range[1]:
        flags.append(f"C_mid not identified: {10 ** fit.log10_c_mid:.3g} lies outside the measured range")
    names = ["r0", "a", "log10_c_mid", "b"]
    values = [fit.r0, fit.a, fit.log10_c_mid, fit.b]
    free_bounds = ([bounds[0][i] for i in free], [bounds[1][i] for i in free])
    stuck = at_bounds([names[i] for i in free], [values[i] for i in free], free_bounds)
    flags += [f"{name} at its {side} bound" for name, side in stuck]
    return tuple(flags)


def levels(values: Sequence[int]) -> list[int]:
    """The sequence of distinct values along increasing compute, repeats collapsed (2,2,4,4,8 -> 2,4,8)."""
    return [int(v) for v, _ in itertools.groupby(values)]


def optimum_name(column: str) -> str:
    """How the text names the optimum of a grid column: n*, B_problem*."""
    return {"n": "n*", "b_problem": "B_problem*"}.get(column, f"{column}*")


def fit_to_json(fit: Fit) -> dict[str, Any]:
    """A fit as JSON with `ok`; a `FitFailure` as its kind and reason."""
    entry: dict[str, Any] = {"ok": not isinstance(fit, FitFailure), **asdict(fit)}
    if isinstance(fit, RewardFit):
        entry["flags"] = list(fit.flags)
        entry["identified"] = not fit.flags
    if isinstance(fit, OptimumFit):
        entry["direction"] = fit.direction
    return entry


def parameter_intervals(fit: Fit, replicas: Sequence[Fit | None]) -> dict[str, Any]:
    """95 % bootstrap intervals of a fit's parameters over the replicas that made one, and their samples."""
    made = [r for r in replicas if r is not None and not isinstance(r, FitFailure)]
    if isinstance(fit, FitFailure) or not made:
        return {}
    names = [n for n in asdict(fit) if n not in ("rmse", "num_points", "flags")]
    values = np.array([[getattr(r, n) for n in names] for r in made])
    low, high = np.percentile(values, [2.5, 97.5], axis=0)
    return {
        "intervals": {n: [float(lo), float(hi)] for n, lo, hi in zip(names, low, high)},
        "replicas_fitted": len(made),
        "samples": values.tolist(),
    }


def reward_fit_from_json(entry: Mapping[str, Any]) -> RewardFit | FitFailure:
    """Inverse of the JSON form of a curve's fit."""
    if not entry["ok"]:
        return FitFailure(entry.get("kind", "failed"), entry["reason"])
    fields = {name: entry[name] for name in RewardFit.__dataclass_fields__ if name in entry and name != "flags"}
    return RewardFit(**fields, flags=tuple(entry.get("flags", ())))


def optimum_fit_from_json(entry: Mapping[str, Any]) -> OptimumFit | FitFailure:
    """Inverse of the JSON form of an optimum's law."""
    if not entry["ok"]:
        return FitFailure(entry.get("kind", "failed"), entry["reason"])
    return OptimumFit(**{name: entry[name] for name in OptimumFit.__dataclass_fields__})
