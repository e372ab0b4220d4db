"""The law of x*(C) (x* = n* or B_problem*) from the whole estimator, and what its data identify.

The paper fits log2 x* = L / (1 + exp(-k (log10 C - log10 C0))) + b to the frontier's x* at every measured
compute point, and so does this module: no point is gated out. Near every crossing two adjacent values are
level by definition, so on a smooth rising law most points of the rise are "ties"; a law fitted only to
points that one value wins clearly is fitted to the flat low-compute part where nothing moves. The points
are weighted so that each decade of compute counts alike (`decade_weights`): checkpoints are dense at low
compute, where nothing moves.

Uncertainty comes from bootstrapping the whole estimator, as scaling-law practice does (Chinchilla's
approaches 1 and 2, and the replication by Besiroglu et al. 2024): each replica refits every curve, takes
its own frontier at the same compute points and fits its own law (`isocompute.fits.fits_json`). A tie between
32 and 64 is then what it is: half of the replicas say 32, half 64, and the law passes between them.

The verdict (`judge_law`) reads the replicas' predictions, in this order:

1. fewer than `LAW_MIN_POINTS` compute points, or one value of x* at every point: no law (`too_few_points`,
   `constant`);
2. a move of x* against the law's direction between two compute points that at least `RESOLVED_SHARE` of the
   replicas reproduce (and the point estimate shows): `not_monotone`;
3. the change of the law across the measured range (in doublings of x*) has a 95 % interval that reaches
   below half a doubling (on a grid of doublings, less is no change): `not_resolved`;
4. fewer than `RESOLVED_SHARE` of the replicas' laws predict x* within a factor 2 of the central law at every
   measured compute point (up to a shift of half the points' spacing there, which the points cannot
   resolve): `noise`.

A law that passes is reported (`ok`), and says what it does not identify instead of being refused:
`plateau_not_reached` where the law is still moving by more than half a doubling at an end of the measured
range (its level there is not identified; it is the power law the data show, with its slope over the top
decade and that slope's interval), and `step` where its change is sharper than the compute points
resolve (its two levels and where; slope not identified). Both predict only inside the measured range; an
`identified` law may be extrapolated, with a warning.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.special import expit

from isocompute.fits.forms import Bounds, FitFailure, OptimumFit, optimum_curve, optimum_name

# A law needs at least this many compute points.
LAW_MIN_POINTS = 5
# The share of replicas that makes a finding reproducible: a reversal, the laws' agreement.
RESOLVED_SHARE = 0.8
# Less change than this, in doublings of x*, is no change on a grid of doublings.
NO_CHANGE = 0.5
# The replicas' percentiles that bound a 95 % interval.
INTERVAL = (2.5, 97.5)
# The law's change per decade is read over this many decades at the top of the measured range.
TOP_DECADES = 1.0
# The global search of the law's fit: slopes k (per decade) and midpoints log10 C0 (decades apart), then a
# least-squares polish of at most this many evaluations.
K_GRID = np.geomspace(0.05, 100.0, 40)
C0_GRID_STEP = 0.05
POLISH_EVALUATIONS = 200


def _spans(compute: np.ndarray) -> np.ndarray:
    """Per compute point, the span of log10 C it stands for: half the gaps to its neighbours, an end point
    the whole gap to its one neighbour."""
    x = np.log10(np.asarray(compute, dtype=float))
    if len(x) < 2:
        return np.ones(len(x))
    gaps = np.diff(x)
    return np.maximum(np.concatenate([[gaps[0]], (gaps[:-1] + gaps[1:]) / 2, [gaps[-1]]]), 1e-9)


def decade_weights(compute: np.ndarray) -> np.ndarray:
    """Per compute point, the span of log10 C it stands for (`_spans`), scaled to mean 1: each decade of
    compute weighs alike, however densely it was measured."""
    spans = _spans(compute)
    return spans / spans.mean()


def _bounds(x: np.ndarray, y: np.ndarray) -> Bounds:
    """L within 4 spans of the data, k up to a step over 1 % of a decade, C0 within 2 decades, b near the data."""
    span = float(np.ptp(y)) + 1.0
    low, high = float(x.min()), float(x.max())
    return (
        [-4 * span, 0.01, low - 2.0, float(y.min()) - 4 * span],
        [4 * span, 100.0, high + 2.0, float(y.max()) + 4 * span],
    )


def fit_law(compute: np.ndarray, optimum: np.ndarray) -> OptimumFit | FitFailure:
    """The logistic of log2 x* in log10 C fitted to x* at every compute point, each decade weighted alike.

    No test of what the data identify (that is `judge_law`'s, from the replicas). The fit is global, so
    that every replica finds its own optimum wherever its frontier moves: for fixed k and C0 the form is
    linear in L and b, so those are solved exactly on a grid of (k, log10 C0) (`K_GRID` x `C0_GRID_STEP`
    within the bounds), and the best grid point is polished by least squares.
    """
    compute = np.asarray(compute, dtype=float)
    keep = np.isfinite(optimum) & (compute > 0)
    if keep.sum() < 2:
        return FitFailure("no_points", "fewer than two compute points have a frontier")
    x = np.log10(compute[keep])
    y = np.log2(np.asarray(optimum, dtype=float)[keep])
    if np.ptp(y) == 0:
        return OptimumFit(0.0, 1.0, float(np.median(x)), float(y[0]), 0.0, len(x))
    weights = decade_weights(compute[keep])
    bounds = _bounds(x, y)
    # Inside the bounds, as least_squares requires: the C0 grid's last cell may pass c_high by up to half a
    # step, and where every cell is refused the argmin's cell holds an L and b outside theirs.
    start = np.clip(_grid_start(x, y, weights, bounds), *bounds)
    scale = np.sqrt(weights)

    def residuals(p: np.ndarray) -> np.ndarray:
        return scale * (optimum_curve(x, *p) - y)

    def jacobian(p: np.ndarray) -> np.ndarray:
        L, k, x0, _ = p
        s = expit(k * (x - x0))
        slope = L * s * (1 - s)
        return scale[:, None] * np.stack([s, slope * (x - x0), -slope * k, np.ones_like(x)], axis=1)

    result = least_squares(residuals, start, jac=jacobian, bounds=bounds, max_nfev=POLISH_EVALUATIONS)
    L, k, x0, b = (float(v) for v in result.x)
    return OptimumFit(L, k, x0, b, float(np.sqrt(np.mean(result.fun**2))), len(x))


def _grid_start(x: np.ndarray, y: np.ndarray, weights: np.ndarray, bounds: Bounds) -> np.ndarray:
    """The best (L, k, log10 C0, b) on the grid of k and C0, with L and b solved by weighted least squares."""
    (l_low, k_low, c_low, b_low), (l_high, k_high, c_high, b_high) = bounds
    ks = K_GRID[(K_GRID >= k_low) & (K_GRID <= k_high)]
    centres = np.arange(c_low, c_high + C0_GRID_STEP / 2, C0_GRID_STEP)
    s = expit(ks[:, None, None] * (x[None, None, :] - centres[None, :, None]))
    w = weights / weights.sum()
    s_mean = (s * w).sum(axis=2, keepdims=True)
    y_mean = float((y * w).sum())
    variance = (w * (s - s_mean) ** 2).sum(axis=2)
    L = np.where(variance > 1e-12, (w * (s - s_mean) * (y - y_mean)).sum(axis=2) / np.maximum(variance, 1e-12), 0.0)
    b = y_mean - L * s_mean[..., 0]
    error = (w * (y - b[..., None] - L[..., None] * s) ** 2).sum(axis=2)
    error[(L < l_low) | (L > l_high) | (b < b_low) | (b > b_high) | (variance <= 1e-12)] = np.inf
    i, j = np.unravel_index(np.argmin(error), error.shape)
    return np.array([L[i, j], ks[i], centres[j], b[i, j]])


@dataclass(frozen=True)
class LawVerdict:
    """The central law with what the replicas say of it; `law` is a `FitFailure` where none is reported.

    `identified` is "identified", "plateau_not_reached" or "step" for a reported law (the last two predict
    only inside `range`), None for a refusal. `rise` is the law's change across the measured range in
    doublings of x*, with its 95 % interval; `agreement` the share of replicas whose law is within a factor 2
    of the central law at every measured point; `reversal` the move against the direction that most
    replicas reproduce.
    """

    law: OptimumFit | FitFailure
    identified: str | None = None
    reason: str | None = None
    range: tuple[float, float] | None = None
    agreement: float | None = None
    rise: dict[str, Any] | None = None
    reversal: dict[str, Any] | None = None
    slope_at_top: dict[str, Any] | None = None
    step: dict[str, Any] | None = None
    points_used: int = 0
    replicas: list[OptimumFit | FitFailure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The verdict's fields for the fits JSON (the law's own parameters are written beside them)."""
        entry = {name: value for name, value in asdict(self).items() if name not in ("law", "replicas")}
        entry["range"] = list(self.range) if self.range else None
        entry["extrapolates"] = self.identified == "identified"
        return entry


def _agrees(replica: OptimumFit, central: OptimumFit, compute: np.ndarray) -> bool:
    """Whether a replica's law predicts x* within a factor 2 of the central law at every measured compute
    point, up to a shift in compute of half the spacing of the points there: the points cannot place the law
    more closely than that, and a step between two points is the same step wherever in the gap it falls."""
    x = np.log10(compute)
    half = _spans(compute) / 2 if len(x) > 1 else np.zeros(len(x))
    ends = [optimum_curve(x + shift, replica.L, replica.k, replica.log10_c0, replica.b) for shift in (-half, half)]
    low, high = np.minimum(*ends), np.maximum(*ends)
    centre = optimum_curve(x, central.L, central.k, central.log10_c0, central.b)
    return bool(np.all((centre >= low - 1.0) & (centre <= high + 1.0)))


def _interval(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.percentile(values, INTERVAL)]


def _reversal(values: np.ndarray, chosen: np.ndarray, compute: np.ndarray, sign: float) -> dict[str, Any] | None:
    """The pair of compute points between which x* moves against `sign` in the point estimate and in the most
    replicas (the share of replicas with both points), or None where the point estimate never moves back."""
    logs = np.log2(values.astype(float))
    best = None
    for i, j in itertools.combinations(range(len(values)), 2):
        if sign * (logs[j] - logs[i]) >= 0:
            continue
        pair = chosen[:, [i, j]]
        pair = pair[~np.isnan(pair).any(axis=1)]
        share = float(np.mean(sign * (pair[:, 1] - pair[:, 0]) < 0)) if len(pair) else 0.0
        if best is None or share > best["replicas"]:
            best = {"from": int(values[i]), "to": int(values[j]), "compute": [float(compute[i]), float(compute[j])],
                    "replicas": share}  # fmt: skip
    return best


def _top_slope(law: OptimumFit, high: float, low: float) -> float:
    """The law's change in doublings of x* per decade of compute over the top `TOP_DECADES` of the range."""
    start = max(np.log10(low), np.log10(high) - TOP_DECADES)
    end = np.log10(high)
    if end <= start:
        return 0.0
    values = optimum_curve(np.array([start, end]), law.L, law.k, law.log10_c0, law.b)
    return float((values[1] - values[0]) / (end - start))


def judge_law(
    compute: np.ndarray,
    values: np.ndarray,
    chosen: np.ndarray | None,
    replicas: Sequence[OptimumFit | FitFailure],
    column: str,
    law: OptimumFit | FitFailure,
) -> LawVerdict:
    """The verdict on the central `law` (fitted to `values`, x* at every point of `compute`), from the
    replicas' choices at the same points (`chosen`: replicas x points, NaN where a replica has no frontier)
    and their own laws (`replicas`). See the module's docstring for the rules."""
    name = optimum_name(column)
    compute = np.asarray(compute, dtype=float)
    values = np.asarray(values)
    common = {"points_used": len(values), "replicas": list(replicas)}
    if not len(values):
        return LawVerdict(FitFailure("no_points", "no compute point has a frontier"), **common)
    low, high = float(compute.min()), float(compute.max())
    common["range"] = (low, high)
    distinct = sorted({int(v) for v in values})
    if len(distinct) == 1:
        return LawVerdict(FitFailure("constant", f"{name} constant at {distinct[0]} over C in [{low:.3g}, {high:.3g}]"), **common)
    if len(values) < LAW_MIN_POINTS:
        return LawVerdict(
            FitFailure("too_few_points", f"{len(values)} compute points, need {LAW_MIN_POINTS} for a law of {name}"), **common
        )
    if isinstance(law, FitFailure):
        return LawVerdict(law, **common)
    if chosen is None or not len(replicas):
        return LawVerdict(
            FitFailure("not_judged", "no bootstrap replicas (bootstrap = 0): what the data identify cannot be judged"),
            **common,
        )
    central = optimum_curve(np.log10(compute), law.L, law.k, law.log10_c0, law.b)
    made = [r for r in replicas if isinstance(r, OptimumFit)]
    ends = np.log10([low, high])
    rises = np.array([np.diff(optimum_curve(ends, r.L, r.k, r.log10_c0, r.b))[0] for r in made])
    rise = float(central[-1] - central[0])
    sign = 1.0 if rise >= 0 else -1.0
    common["rise"] = {"value": rise, "interval": _interval(rises) if len(made) else None}
    agreement = float(sum(_agrees(r, law, compute) for r in made) / len(replicas))
    common["agreement"] = agreement
    reversal = _reversal(values, chosen, compute, sign)
    common["reversal"] = reversal
    if reversal and reversal["replicas"] >= RESOLVED_SHARE:
        where = f"{reversal['from']} -> {reversal['to']} between C = {reversal['compute'][0]:.3g} and {reversal['compute'][1]:.3g}"
        return LawVerdict(
            FitFailure("not_monotone", f"{name} not monotone: {where} in {reversal['replicas']:.0%} of bootstrap replicas "
                       f"(a reversal needs {RESOLVED_SHARE:.0%})"),  # fmt: skip
            **common,
        )
    lowest = sign * np.percentile(rises, INTERVAL[0] if sign > 0 else INTERVAL[1]) if len(made) else -np.inf
    if abs(rise) < NO_CHANGE or lowest < NO_CHANGE:
        interval = common["rise"]["interval"] or [float("nan")] * 2
        return LawVerdict(
            FitFailure(
                "not_resolved",
                f"the change of {name} over C in [{low:.3g}, {high:.3g}] is not resolved: {rise:+.2f} doublings, 95 % "
                f"interval [{interval[0]:+.2f}, {interval[1]:+.2f}] comes within {NO_CHANGE} of a doubling of no change "
                f"(the frontier's {name} ranges over {', '.join(map(str, distinct))})",
            ),
            **common,
        )
    if agreement < RESOLVED_SHARE:
        return LawVerdict(
            FitFailure(
                "noise",
                f"the replicas disagree: only {agreement:.0%} of bootstrap replicas' laws predict {name} within a "
                f"factor 2 of this law at every measured compute point, up to half the points' spacing (needs "
                f"{RESOLVED_SHARE:.0%}); the frontier's "
                f"{name} is noise at this sample size",
            ),
            **common,
        )
    return _partial(law, compute, values, made, name, common)


def _partial(
    law: OptimumFit, compute: np.ndarray, values: np.ndarray, made: Sequence[OptimumFit], name: str, common: dict[str, Any]
) -> LawVerdict:
    """A reported law: identified, or what it leaves open (a plateau beyond the range, a step's slope)."""
    low, high = common["range"]
    x = np.log10(compute)
    ends = optimum_curve(np.array([x[0], x[-1]]), law.L, law.k, law.log10_c0, law.b)
    width = 2 * np.log(9) / law.k
    inside = (x > law.log10_c0).argmax() if (x > law.log10_c0).any() else len(x)
    if 0 < inside < len(x) and width < x[inside] - x[inside - 1]:
        before, after = int(values[inside - 1]), int(values[inside])
        step = {"from": before, "to": after, "between": [float(compute[inside - 1]), float(compute[inside])],
                "at": float(10**law.log10_c0)}  # fmt: skip
        return LawVerdict(
            law, "step",
            f"a step of {name} from {before} to {after} between C = {compute[inside - 1]:.3g} and {compute[inside]:.3g}; "
            f"slope not identified (the change is sharper than the compute points resolve)",
            step=step, **common,
        )  # fmt: skip
    open_top = abs(law.b + law.L - ends[1]) > NO_CHANGE
    open_bottom = abs(ends[0] - law.b) > NO_CHANGE
    if open_top or open_bottom:
        slopes = np.array([_top_slope(r, high, low) for r in made])
        slope = {"value": _top_slope(law, high, low), "interval": _interval(slopes), "decades": TOP_DECADES,
                 "exponent": _top_slope(law, high, low) * np.log10(2)}  # fmt: skip
        where = " and ".join(
            text for text, is_open in (("below C = %.3g" % low, open_bottom), ("above C = %.3g" % high, open_top)) if is_open
        )
        return LawVerdict(
            law, "plateau_not_reached",
            f"plateau not reached {where}: {name} changes by {slope['value']:+.2f} doublings per decade over the top "
            f"{TOP_DECADES:g} decade of the range (95 % interval [{slope['interval'][0]:+.2f}, {slope['interval'][1]:+.2f}]; "
            f"{name} ~ C^{slope['exponent']:.2f}); the law predicts only inside the measured range",
            slope_at_top=slope, **common,
        )  # fmt: skip
    return LawVerdict(law, "identified", None, **common)
