"""The two fitted forms of the study, and what their data identify.

Forms (docs/reference/recipe.md): per curve, R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) with B > 0
(ScaleRL's, monotone by construction), fitted in log C; where the data reject it for a curve that falls
after its peak (training reward once a small n has overfit its problems), the same sigmoid less a decline
D (log10 C - log10 C_peak) past C_peak (`DECLINE_LEVEL`); for the optimum along the frontier,
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
from scipy.stats import f as f_distribution

SIGMOID_PARAMS = 4
# The decline after a peak adds two parameters (D >= 0, C_peak at or past C_mid inside the range), and is fitted
# only where an F test of the two rejects the sigmoid alone. A sigmoid reads a curve that rises and then falls
# as a lower ceiling, so a small n that led and then fell keeps leading on paper (the simulated policy's
# training-set studies, docs/log/fits-decline.md). The level is for the curves of a study together, as the
# leaders' bands are: a study's fit divides it among its curves (`fits.curves.fit_curves`), so that a study
# of monotone curves gets a decline on any of them in at most this share of draws.
DECLINE_PARAMS = 2
DECLINE_LEVEL = 0.05
# A fall is seen on at least this many measured points after the curve's fitted maximum.
POINTS_PAST_PEAK = 2
# Least-squares evaluations per start: a start that has not converged by then is abandoned (others remain).
MAX_EVALUATIONS = 300
# A curve whose last point holds less than this share of its fitted gain (A - R0) has not saturated.
SATURATED_SHARE = 0.9
# A parameter within this share of its bounds' span from a bound is "at its bound".
AT_BOUND = 0.01
# Where R0 and B sit in both forms' parameters (r0, A, C_mid, B[, D, gap]): the two a fit may hold (`_held`).
R0, SLOPE = 0, 3
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
    # Reward lost per decade of compute past 10**log10_c_peak; 0 for the sigmoid alone (the paper's form).
    decline: float = 0.0
    log10_c_peak: float = 0.0

    @property
    def free_parameters(self) -> int:
        return SIGMOID_PARAMS - self.anchored + (DECLINE_PARAMS if self.decline > 0 else 0)

    def __call__(self, compute: np.ndarray | float) -> np.ndarray:
        return declining_curve(np.log10(compute), self.r0, self.a, self.log10_c_mid, self.b, self.decline, self.log10_c_peak)

    def sigmoid(self, compute: np.ndarray | float) -> np.ndarray:
        """The rising part alone: what the curve's saturation is judged on."""
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


def declining_curve(
    log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float, decline: float, log10_c_peak: float
) -> np.ndarray:
    """The reward sigmoid less a linear decline in log10 C past the peak's compute."""
    x = np.asarray(log10_c, dtype=float)
    return reward_curve(x, r0, a, log10_c_mid, b) - decline * np.maximum(0.0, x - log10_c_peak)


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


def declining_past_mid(
    log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float, decline: float, gap: float
) -> np.ndarray:
    """`declining_curve` with the peak written as its distance past the midpoint, as it is fitted."""
    return declining_curve(log10_c, r0, a, log10_c_mid, b, decline, log10_c_mid + gap)


def declining_jacobian(
    log10_c: np.ndarray, r0: float, a: float, log10_c_mid: float, b: float, decline: float, gap: float
) -> np.ndarray:
    """d `declining_past_mid` / d (r0, A, C_mid, B, D, gap), one row per point: the decline fits start from 18
    points, so finite differences would make them most of a study's fitting time. Moving C_mid moves the peak
    with it (C_peak = C_mid + gap), so d/d C_mid carries the decline's D past the peak as d/d gap does."""
    x = np.asarray(log10_c, dtype=float)
    past = x - log10_c_mid - gap
    falling = decline * (past > 0)
    rising = reward_jacobian(x, r0, a, log10_c_mid, b)
    rising[:, 2] += falling
    return np.column_stack([rising, -np.maximum(0.0, past), falling])


def _held(r0: float | None, slope: float | None) -> dict[int, float]:
    """The parameters a fit holds, by their place in either form: R0 at the base model's reward (the curve's
    value as C -> 0), B at the slope the other arms share (`adaptive.extrapolation`)."""
    return {index: value for index, value in ((R0, r0), (SLOPE, slope)) if value is not None}


def _fit_held(
    curve: Any,
    jacobian: Any,
    x: np.ndarray,
    y: np.ndarray,
    starts: Sequence[Sequence[float]],
    bounds: Bounds,
    held: Mapping[int, float],
) -> tuple[list[float], float] | None:
    """`best_fit` of `curve` over its parameters not `held`, with starts, bounds and the result in all of its
    parameters: the one place where both forms hold R0 or B."""
    size = len(bounds[0])
    free = [index for index in range(size) if index not in held]

    def every(params: Sequence[float]) -> list[float]:
        values = {**held, **dict(zip(free, params))}
        return [float(values[index]) for index in range(size)]

    best = best_fit(
        lambda log10_c, *p: curve(log10_c, *every(p)),
        x,
        y,
        [[s[i] for i in free] for s in starts],
        ([bounds[0][i] for i in free], [bounds[1][i] for i in free]),
        lambda log10_c, *p: jacobian(log10_c, *every(p))[:, free],
    )
    return None if best is None else (every(best[0]), best[1])


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
    decline_level: float = DECLINE_LEVEL,
) -> RewardFit | FitFailure:
    """Fit the reward sigmoid to a curve's points (the study drops points below `fits.min_compute` before).

    With `r0` given (the base model's reward, the curve's value as C -> 0) only A, C_mid and B are fitted;
    with `slope` given B is held at it too (the slope the other arms share, `adaptive.extrapolation`).
    A fit needs more points than free parameters: with as many, least squares interpolates exactly and
    the "fit" says nothing. `start` (a previous fit) replaces the grid of starting points, which is how the
    bootstrap stays fast, and keeps the start's form (with or without a decline). Without a start or a held
    slope, a decline after the peak is fitted where an F test rejects the sigmoid alone at `decline_level`.
    """
    compute = np.asarray(compute, dtype=float)
    reward = np.asarray(reward, dtype=float)
    keep = (compute > 0) & np.isfinite(reward)
    x, y = np.log10(compute[keep]), reward[keep]
    held = _held(r0, slope)
    free = SIGMOID_PARAMS - len(held)
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
    if start is not None and start.decline > 0:
        return _declining_fit(x, y, held, [[*starts[0], start.decline, start.log10_c_peak]], bounds)
    best = _fit_held(reward_curve, reward_jacobian, x, y, starts, bounds, held)
    if best is None:
        return FitFailure("no_convergence", "least squares did not converge from any start")
    params, error = best
    fit = RewardFit(*params, rmse=error, num_points=len(x), anchored=R0 in held)
    fit = RewardFit(**{**asdict(fit), "flags": _reward_flags(fit, (low, high), bounds, held)})
    if start is not None or slope is not None:
        return fit
    falling = _falling(x, y, held, fit, bounds, decline_level)
    if falling is None:
        return fit
    # A fall seen on several points, not on the last alone: the test must reject the sigmoid without it too.
    head = np.argsort(x)[:-1]
    shorter = fit_reward(10 ** x[head], y[head], r0, start=fit)
    if not isinstance(shorter, RewardFit) or _falling(x[head], y[head], held, shorter, bounds, decline_level) is None:
        return fit
    return falling


def _falling(
    x: np.ndarray, y: np.ndarray, held: Mapping[int, float], sigmoid: RewardFit, bounds: Bounds, level: float
) -> RewardFit | None:
    """The fit with a decline after the peak where it rejects `sigmoid` (the sigmoid alone, fitted to the same
    points) at `level`, else None."""
    risen = x[x >= sigmoid.log10_c_mid]
    if len(x) <= sigmoid.free_parameters + DECLINE_PARAMS or len(risen) <= POINTS_PAST_PEAK:
        return None
    top = max(sigmoid.a, float(y.max()))
    starts = [[sigmoid.r0, a, sigmoid.log10_c_mid, sigmoid.b, decline, peak]
              for a, decline, peak in itertools.product((sigmoid.a, top), (0.003, 0.01, 0.03), np.quantile(risen, [0.25, 0.5, 0.75]))]  # fmt: skip
    falling = _declining_fit(x, y, held, starts, bounds)
    return falling if isinstance(falling, RewardFit) and _rejects_sigmoid(sigmoid, falling, x, level) else None


def _declining_fit(
    x: np.ndarray, y: np.ndarray, held: Mapping[int, float], starts: Sequence[Sequence[float]], bounds: Bounds
) -> RewardFit | FitFailure:
    """The sigmoid with a decline past a peak at or after its midpoint (x = log10 C), from `starts`
    (r0, A, C_mid, B, D, C_peak), with the `held` parameters of `_held`. The peak is fitted as its distance
    past the midpoint (`declining_past_mid`): a decline that began before the curve rose would tilt its base,
    not follow a peak."""
    low, high = float(x.min()), float(x.max())
    full = ([*bounds[0], 0.0, 0.0], [*bounds[1], 1.0, high - bounds[0][2]])
    gaps = [[*s[:5], max(s[5] - s[2], 0.0)] for s in starts]
    best = _fit_held(declining_past_mid, declining_jacobian, x, y, gaps, full, held)
    if best is None:
        return FitFailure("no_convergence", "least squares did not converge from any start")
    (r0, a, mid, b, decline, gap), error = best
    fit = RewardFit(r0, a, mid, b, rmse=error, num_points=len(x), anchored=R0 in held, decline=decline,
                    log10_c_peak=mid + gap)  # fmt: skip
    return RewardFit(**{**asdict(fit), "flags": _reward_flags(fit, (low, high), bounds, held)})


def _rejects_sigmoid(sigmoid: RewardFit, falling: RewardFit, log10_c: np.ndarray, level: float) -> bool:
    """Whether the curve falls after its peak: the fitted decline's curve peaks inside the measured range with
    at least `POINTS_PAST_PEAK` measured points after its maximum, and its two parameters explain enough of the
    sigmoid's residual (an F test at `level`)."""
    points = sigmoid.num_points
    dof = points - falling.free_parameters
    rss_sigmoid, rss_falling = points * sigmoid.rmse**2, points * falling.rmse**2
    if falling.decline <= 0 or dof <= 0 or rss_falling <= 0 or rss_falling >= rss_sigmoid:
        return False
    if np.sum(log10_c > log10_c[np.argmax(falling(10**log10_c))]) < POINTS_PAST_PEAK:
        return False
    statistic = (rss_sigmoid - rss_falling) / DECLINE_PARAMS / (rss_falling / dof)
    return bool(f_distribution.sf(statistic, DECLINE_PARAMS, dof) < level)


def _reward_flags(
    fit: RewardFit, log10_range: tuple[float, float], bounds: Bounds, held: Mapping[int, float]
) -> tuple[str, ...]:
    """What the curve's data leave undetermined; the fit stays usable inside its measured range (a held
    parameter is not the data's, so it is never flagged at its bound)."""
    flags = []
    gain = fit.a - fit.r0
    reached = fit.sigmoid(10 ** log10_range[1]) - fit.r0
    if abs(gain) > 1e-9 and reached / gain < SATURATED_SHARE:
        flags.append(f"A not identified: curve not saturated (its last point has {reached / gain:.0%} of the fitted gain)")
    if not log10_range[0] <= fit.log10_c_mid <= log10_range[1]:
        flags.append(f"C_mid not identified: {10 ** fit.log10_c_mid:.3g} lies outside the measured range")
    names = ["r0", "a", "log10_c_mid", "b"]
    values = [fit.r0, fit.a, fit.log10_c_mid, fit.b]
    free = [index for index in range(SIGMOID_PARAMS) if index not in held]
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
    unused = () if isinstance(fit, RewardFit) and fit.decline > 0 else ("decline", "log10_c_peak")
    names = [n for n in asdict(fit) if n not in ("rmse", "num_points", "flags", *unused)]
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
