"""The law of x*(C) (x* = n* or B_problem*) through the leader sets, and what its material evidence identifies.

The paper fits log2 x* = L / (1 + exp(-k (log10 C - log10 C0))) + b to the frontier's x* at every measured
compute point. Here the data of the law are, at each compute point, the *leaders*: every x whose reward is
within a material margin of the best (`isocompute.fits.leaders`). The law is charged its distance to the
nearest leader (in doublings), so near a crossing, where two adjacent values are level by definition, it
may pass either; a point where every measured value leads, or where a single curve was measured, holds no
evidence of x* and enters neither the fit nor the verdict. The material points are weighted so that each
decade of compute counts alike (`decade_weights`): checkpoints are dense at low compute, where nothing moves.

Uncertainty comes from bootstrapping the whole estimator, as scaling-law practice does (Chinchilla's
approaches 1 and 2, and the replication by Besiroglu et al. 2024): each replica refits every curve, takes
its own leaders at the same compute points and fits its own law (`isocompute.fits.study_fit`).

The verdict (`judge_law`) reads only material points, in this order:

1. no material point (`no_evidence`); one value leading at every material point (`constant`); fewer than
   `LAW_MIN_POINTS` material points (`too_few_points`);
2. leader sets that are disjoint *against* the law's direction between two material points: `not_monotone`
   (the sets hold at every point at once at `FAMILY_LEVEL`, so a monotone truth shows such a pair in at most
   1 - `FAMILY_LEVEL` of studies, however many points and pairs there are; the share of replicas whose own
   sets part there is reported beside it);
3. no two material points whose (simultaneous) leader sets are disjoint *in* the law's direction, or a change of the
   law across the material range (in doublings of x*) whose 95 % interval reaches below half a doubling
   (on a grid of doublings, less is no change): `not_resolved`;
4. fewer than `RESOLVED_SHARE` of the replicas' laws pass within a factor 2 of the band (the sets that hold
   at every point at once) at every material point and of the point by point leader set over
   `AGREEMENT_SHARE` of the material points' decades (up to a shift of half the points' spacing there, which
   the points cannot resolve): `noise`. Both parts are judged so that more points do not make them harder.

A law that passes is reported (`ok`), and says what it does not identify instead of being refused:
`plateau_not_reached` where the law is still moving by more than half a doubling at an end of the material
range (its level there is not identified; it is the power law the data show, with its slope over the top
decade and that slope's interval), and `step` where its change is sharper than the compute points
resolve (its two levels and where; slope not identified). Both predict only inside the measured range; an
`identified` law may be extrapolated, with a warning. A falling law (L < 0) is a law, reported as falling.
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
from isocompute.fits.leaders import ALL_LEAD, CENSORED, FAMILY_LEVEL, RESOLVED_SHARE, SINGLE, ColumnLeaders

# A law needs at least this many material compute points.
LAW_MIN_POINTS = 5
# Less change than this, in doublings of x*, is no change on a grid of doublings.
NO_CHANGE = 0.5
# A law agrees with the point by point leader sets where it passes within a factor 2 of them over this share
# of the material points' decades: it may miss them over a tenth of the range, not over a dip that lasts a
# sixth (docs/log/fits-simultaneous.md, pilot 11).
AGREEMENT_SHARE = 0.9
# The replicas' percentiles that bound a 95 % interval.
INTERVAL = (2.5, 97.5)
# The law's change per decade is read over this many decades at the top of the measured range.
TOP_DECADES = 1.0
# The global search of the law's fit: slopes k (per decade) and midpoints log10 C0 (decades apart), then a
# least-squares polish of at most this many evaluations.
K_GRID = np.geomspace(0.05, 100.0, 24)
C0_GRID_STEP = 0.1
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


# A law that fits every leader set still has to choose among the laws that do: it leans towards the
# point estimate's argmax with this weight (in doublings), small against a leader set's own pull.
TIE_BREAK = 0.1
# Alternating projections per grid cell when the law is fitted to leader sets (each halves the gap or better).
PROJECTIONS = 8


def fit_law(
    compute: np.ndarray, optimum: np.ndarray, low: np.ndarray | None = None, high: np.ndarray | None = None
) -> OptimumFit | FitFailure:
    """The logistic of log2 x* in log10 C fitted through the leader sets, each decade weighted alike.

    At each compute point the law is charged its distance (in doublings) to the nearest leader, that is to
    the interval [`low`, `high`] of the values that lead there (`isocompute.fits.leaders`), plus `TIE_BREAK`
    times its distance to the argmax `optimum`; without `low` and `high` the interval is the argmax alone,
    the paper's fit. No test of what the data identify (that is `judge_law`'s, from the replicas). The fit
    is global, so that every replica finds its own optimum wherever its frontier moves: for fixed k and C0
    the form is linear in L and b, which are found on a grid of (k, log10 C0) (`K_GRID` x `C0_GRID_STEP`
    within the bounds) by alternating projections onto the leader sets, and the best grid point is polished
    by least squares from inside the bounds.
    """
    compute = np.asarray(compute, dtype=float)
    optimum = np.asarray(optimum, dtype=float)
    low = optimum if low is None else np.asarray(low, dtype=float)
    high = optimum if high is None else np.asarray(high, dtype=float)
    keep = np.isfinite(optimum) & np.isfinite(low) & np.isfinite(high) & (compute > 0) & (optimum > 0) & (low > 0)
    if keep.sum() < 2:
        return FitFailure("no_points", "fewer than two compute points have a frontier")
    x = np.log10(compute[keep])
    centre, lo, hi = (np.log2(values[keep]) for values in (optimum, low, high))
    lo, hi = np.minimum(lo, centre), np.maximum(hi, centre)
    if np.ptp(centre) == 0 and lo.max() <= hi.min():
        return OptimumFit(0.0, 1.0, float(np.median(x)), float(centre[0]), 0.0, len(x))
    weights = decade_weights(compute[keep])
    bounds = _bounds(x, np.concatenate([lo, hi]))
    # Inside the bounds, as least_squares requires: where every grid cell is refused, the argmin's cell
    # holds an L and b outside theirs (the C0 grid itself stops at c_high).
    start = np.clip(_grid_start(x, lo, hi, centre, weights, bounds), *bounds)
    scale = np.sqrt(weights)

    def residuals(p: np.ndarray) -> np.ndarray:
        f = optimum_curve(x, *p)
        return np.concatenate([scale * (f - np.clip(f, lo, hi)), TIE_BREAK * scale * (f - centre)])

    def jacobian(p: np.ndarray) -> np.ndarray:
        L, k, x0, _ = p
        f = optimum_curve(x, *p)
        s = expit(k * (x - x0))
        slope = L * s * (1 - s)
        df = np.stack([s, slope * (x - x0), -slope * k, np.ones_like(x)], axis=1)
        outside = ((f < lo) | (f > hi)).astype(float)
        return np.concatenate([(scale * outside)[:, None] * df, (TIE_BREAK * scale)[:, None] * df])

    result = least_squares(residuals, start, jac=jacobian, bounds=bounds, max_nfev=POLISH_EVALUATIONS)
    L, k, x0, b = (float(v) for v in result.x)
    f = optimum_curve(x, L, k, x0, b)
    return OptimumFit(L, k, x0, b, float(np.sqrt(np.mean((f - np.clip(f, lo, hi)) ** 2))), len(x))


def _grid_start(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, centre: np.ndarray, weights: np.ndarray, bounds: Bounds) -> np.ndarray:
    """The best (L, k, log10 C0, b) on the grid of k and C0. For each cell, L and b minimize the weighted
    squared distance to the leader sets plus the tie-break by alternating projections: project the cell's
    law onto each leader interval, blend with the argmax, refit L and b by weighted least squares (each step
    lowers the charge, which is convex in L and b)."""
    (l_low, k_low, c_low, b_low), (l_high, k_high, c_high, b_high) = bounds
    ks = K_GRID[(K_GRID >= k_low) & (K_GRID <= k_high)]
    centres = np.arange(c_low, c_high + C0_GRID_STEP / 2, C0_GRID_STEP)
    centres = centres[centres <= c_high]
    s = expit(ks[:, None, None] * (x[None, None, :] - centres[None, :, None]))
    w = weights / weights.sum()
    s_mean = (s * w).sum(axis=2, keepdims=True)
    variance = (w * (s - s_mean) ** 2).sum(axis=2)
    usable = variance > 1e-12
    blend = TIE_BREAK**2
    target = np.broadcast_to(centre, s.shape)
    for _ in range(PROJECTIONS if np.any(lo < hi) else 1):
        t_mean = (target * w).sum(axis=2, keepdims=True)
        L = np.where(usable, (w * (s - s_mean) * (target - t_mean)).sum(axis=2) / np.maximum(variance, 1e-12), 0.0)
        b = t_mean[..., 0] - L * s_mean[..., 0]
        f = b[..., None] + L[..., None] * s
        target = (np.clip(f, lo, hi) + blend * centre) / (1 + blend)
    f = b[..., None] + L[..., None] * s
    error = (w * ((f - np.clip(f, lo, hi)) ** 2 + blend * (f - centre) ** 2)).sum(axis=2)
    error[(L < l_low) | (L > l_high) | (b < b_low) | (b > b_high) | ~usable] = np.inf
    i, j = np.unravel_index(np.argmin(error), error.shape)
    return np.array([L[i, j], ks[i], centres[j], b[i, j]])


@dataclass(frozen=True)
class LawVerdict:
    """The central law with what the replicas say of it; `law` is a `FitFailure` where none is reported.

    `identified` is "identified", "plateau_not_reached" or "step" for a reported law (the last two predict
    only inside `range`), None for a refusal. `rise` is the law's change across the material range in
    doublings of x*, with its 95 % interval; `agreement` the share of replicas whose law passes within a
    factor 2 of the leader set at every material point; `reversal` the pair of material points whose leader
    sets fall against the direction in the most replicas; `evidence` how many compute points are material
    and why the others are not.
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
    evidence: dict[str, Any] | None = None
    replicas: list[OptimumFit | FitFailure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The verdict's fields for the fits JSON (the law's own parameters are written beside them)."""
        entry = {name: value for name, value in asdict(self).items() if name not in ("law", "replicas")}
        entry["range"] = list(self.range) if self.range else None
        entry["extrapolates"] = self.identified == "identified"
        return entry


def fit_leaders(compute: np.ndarray, leaders: ColumnLeaders) -> OptimumFit | FitFailure:
    """The law through the leader sets of the material points (`fit_law`)."""
    keep = leaders.material
    return fit_law(compute[keep], leaders.values[keep], leaders.low[keep], leaders.high[keep])


def _passes(replica: OptimumFit, compute: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Where a replica's law passes within a factor 2 of the leader set [low, high], up to a shift in compute
    of half the spacing of the points there: the points cannot place the law more closely than that, and a
    step between two points is the same step wherever in the gap it falls."""
    x = np.log10(compute)
    half = _spans(compute) / 2 if len(x) > 1 else np.zeros(len(x))
    ends = [optimum_curve(x + shift, replica.L, replica.k, replica.log10_c0, replica.b) for shift in (-half, half)]
    reach_low, reach_high = np.minimum(*ends), np.maximum(*ends)
    return (reach_high >= np.log2(low) - 1.0) & (reach_low <= np.log2(high) + 1.0)


def _agrees(replica: OptimumFit, compute: np.ndarray, band: ColumnLeaders, point: ColumnLeaders) -> bool:
    """Whether a replica's law passes within a factor 2 of the sets that hold at every point at once (`band`)
    at every material point, and of the point by point sets at `AGREEMENT_SHARE` of the material points'
    decades (`decade_weights`): a share, which denser evaluation does not make harder to reach."""
    if not bool(np.all(_passes(replica, compute, _low(band, point), _high(band, point)))):
        return False
    weights = decade_weights(compute)
    return bool(np.sum(weights * _passes(replica, compute, point.low, point.high)) >= AGREEMENT_SHARE * np.sum(weights))


def _low(band: ColumnLeaders, point: ColumnLeaders) -> np.ndarray:
    """The smallest value of the band's set, or of the point's where the band has none (no measured leader)."""
    return np.where(np.isnan(band.low), point.low, np.fmin(band.low, point.low))


def _high(band: ColumnLeaders, point: ColumnLeaders) -> np.ndarray:
    """The largest value of the band's set, or of the point's where the band has none."""
    return np.where(np.isnan(band.high), point.high, np.fmax(band.high, point.high))


def _interval(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.percentile(values, INTERVAL)]


def _named(values: Sequence[int]) -> str:
    return str(values[0]) if len(values) == 1 else "{" + ", ".join(map(str, values)) + "}"


def _apart(first: ColumnLeaders, i: int, j: int, sign: float, second: ColumnLeaders | None = None) -> bool:
    """Whether the leaders at point j lie wholly beyond those at point i in the direction `sign` (of `second`
    at j, where given: a replica's leaders)."""
    later = second if second is not None else first
    if sign > 0:
        return bool(later.low[j] > first.high[i])
    return bool(later.high[j] < first.low[i])


def _reversal(compute: np.ndarray, point: ColumnLeaders, replicas: Sequence[ColumnLeaders], sign: float) -> dict[str, Any] | None:
    """The pair of material points whose leader sets are disjoint against `sign` in the point estimate, the one
    the most replicas' own sets part at (with that share), or None where the point estimate's leaders never
    fall back."""
    best = None
    for i, j in itertools.combinations(range(len(compute)), 2):
        if not _apart(point, i, j, -sign):
            continue
        share = float(np.mean([_apart(r, i, j, -sign) for r in replicas])) if replicas else 0.0
        if best is None or share > best["replicas"]:
            best = {"from": point.leaders[i], "to": point.leaders[j], "compute": [float(compute[i]), float(compute[j])],
                    "replicas": share}  # fmt: skip
    return best


def _apart_in_direction(compute: np.ndarray, point: ColumnLeaders, sign: float) -> dict[str, Any] | None:
    """The material points farthest apart in compute whose leader sets are disjoint in the direction `sign`:
    direct evidence that x* moves, or None."""
    for gap in range(len(compute) - 1, 0, -1):
        for i in range(len(compute) - gap):
            if _apart(point, i, i + gap, sign):
                return {"from": point.leaders[i], "to": point.leaders[i + gap],
                        "compute": [float(compute[i]), float(compute[i + gap])]}  # fmt: skip
    return None


def _top_slope(law: OptimumFit, high: float, low: float) -> float:
    """The law's change in doublings of x* per decade of compute over the top `TOP_DECADES` of the range."""
    start = max(np.log10(low), np.log10(high) - TOP_DECADES)
    end = np.log10(high)
    if end <= start:
        return 0.0
    values = optimum_curve(np.array([start, end]), law.L, law.k, law.log10_c0, law.b)
    return float((values[1] - values[0]) / (end - start))


def shared_leaders(leaders: ColumnLeaders) -> set[int]:
    """The values that lead at every material point: where there is one, x* is constant on the evidence."""
    sets = [set(lead) for lead, material in zip(leaders.leaders, leaders.material) if material]
    return set.intersection(*sets) if sets else set()


def _select(leaders: ColumnLeaders, keep: np.ndarray) -> ColumnLeaders:
    """The leaders at the points `keep` only."""
    index = np.flatnonzero(keep)
    return ColumnLeaders(
        leaders.values[index], [leaders.leaders[i] for i in index], leaders.low[index], leaders.high[index],
        [leaders.status[i] for i in index], [leaders.reasons[i] for i in index],
    )  # fmt: skip


def _evidence(leaders: ColumnLeaders, column: str) -> dict[str, Any]:
    """How many compute points are material, and how many are not and why."""
    counts = {kind: sum(s == kind for s in leaders.status) for kind in (ALL_LEAD, SINGLE, CENSORED)}
    return {"material": int(leaders.material.sum()), "points": len(leaders.status), "every_value_leads": counts[ALL_LEAD],
            "single_curve": counts[SINGLE], "censored": counts[CENSORED],
            "why": f"{counts[ALL_LEAD]} point(s) where every {column} measured leads, {counts[SINGLE]} where a single "
                   f"{column} was measured, {counts[CENSORED]} where a run measured elsewhere only may lead"}  # fmt: skip


def judge_law(
    compute: np.ndarray,
    point: ColumnLeaders,
    replicas: Sequence[ColumnLeaders] | None,
    replica_laws: Sequence[OptimumFit | FitFailure],
    column: str,
    law: OptimumFit | FitFailure,
    band: ColumnLeaders | None = None,
) -> LawVerdict:
    """The verdict on the central `law` (fitted through `point`'s leader sets at the material points of
    `compute`), from the replicas' own leaders at the same points and their own laws, and the leader sets that
    hold at every point at once (`band`; the point's own sets where not given). See the module's docstring
    for the rules."""
    name = optimum_name(column)
    compute = np.asarray(compute, dtype=float)
    common: dict[str, Any] = {"points_used": 0, "replicas": list(replica_laws)}
    if not len(compute):
        return LawVerdict(FitFailure("no_points", "no compute point has a frontier"), **common)
    low, high = float(compute.min()), float(compute.max())
    evidence = _evidence(point, column)
    common.update(range=(low, high), evidence=evidence, points_used=evidence["material"])
    keep = point.material
    material = _select(point, keep)
    at = compute[keep]
    if not keep.any():
        return LawVerdict(
            FitFailure("no_evidence", f"no compute point in [{low:.3g}, {high:.3g}] tells the values of {name} apart: "
                       f"{evidence['why']} (within the tolerance or what the data resolve)"),  # fmt: skip
            **common,
        )
    held = _select(band if band is not None else point, keep)
    shared = shared_leaders(material)
    if shared:
        return LawVerdict(
            FitFailure("constant", f"{name} constant at {_named(sorted(shared))}: it leads at every one of the "
                       f"{len(at)} material compute points in [{at.min():.3g}, {at.max():.3g}]"),  # fmt: skip
            **common,
        )
    if len(at) < LAW_MIN_POINTS:
        return LawVerdict(
            FitFailure("too_few_points", f"{len(at)} material compute points, need {LAW_MIN_POINTS} for a law of {name} "
                       f"({evidence['why']})"),  # fmt: skip
            **common,
        )
    if isinstance(law, FitFailure):
        return LawVerdict(law, **common)
    if replicas is None or not len(replica_laws):
        return LawVerdict(
            FitFailure("not_judged", "no bootstrap replicas (bootstrap = 0): what the data identify cannot be judged"),
            **common,
        )
    theirs = [_select(r, keep) for r in replicas]
    made = [r for r in replica_laws if isinstance(r, OptimumFit)]
    ends = np.log10([at.min(), at.max()])
    central = optimum_curve(ends, law.L, law.k, law.log10_c0, law.b)
    rises = np.array([np.diff(optimum_curve(ends, r.L, r.k, r.log10_c0, r.b))[0] for r in made])
    rise = float(central[-1] - central[0])
    sign = 1.0 if rise >= 0 else -1.0
    common["rise"] = {"value": rise, "interval": _interval(rises) if len(made) else None}
    agreement = float(sum(_agrees(r, at, held, material) for r in made) / len(replica_laws))
    common["agreement"] = agreement
    reversal = _reversal(at, held, theirs, sign)
    common["reversal"] = reversal
    if reversal:
        where = f"{_named(reversal['from'])} -> {_named(reversal['to'])} between C = {reversal['compute'][0]:.3g} and {reversal['compute'][1]:.3g}"
        return LawVerdict(
            FitFailure("not_monotone", f"{name} not monotone: its leaders move {where}, sets that hold at every compute "
                       f"point at once at {FAMILY_LEVEL:.0%} (apart in {reversal['replicas']:.0%} of bootstrap replicas' own sets)"),  # fmt: skip
            **common,
        )
    moved = _apart_in_direction(at, material, sign)
    lowest = sign * np.percentile(rises, INTERVAL[0] if sign > 0 else INTERVAL[1]) if len(made) else -np.inf
    if moved is None or abs(rise) < NO_CHANGE or lowest < NO_CHANGE:
        interval = common["rise"]["interval"] or [float("nan")] * 2
        why = (
            f"no two material compute points have leader sets apart (leaders: "
            f"{', '.join(_named(v) for v in levels_of(material.leaders))})"
            if moved is None
            else f"{rise:+.2f} doublings, 95 % interval [{interval[0]:+.2f}, {interval[1]:+.2f}] comes within {NO_CHANGE} "
            f"of a doubling of no change"
        )
        return LawVerdict(
            FitFailure("not_resolved", f"the change of {name} over C in [{at.min():.3g}, {at.max():.3g}] is not resolved: {why}"),
            **common,
        )
    if agreement < RESOLVED_SHARE:
        return LawVerdict(
            FitFailure(
                "noise",
                f"the replicas disagree: only {agreement:.0%} of bootstrap replicas' laws pass within a factor 2 of the "
                f"leaders of {name} at every material compute point, up to half the points' spacing (needs "
                f"{RESOLVED_SHARE:.0%}); the frontier's {name} is noise at this sample size",
            ),
            **common,
        )
    return _partial(law, at, material.values, made, name, common)


def levels_of(leaders: Sequence[Sequence[int]]) -> list[list[int]]:
    """The sequence of distinct leader sets along increasing compute, repeats collapsed."""
    return [list(group) for group, _ in itertools.groupby(tuple(v) for v in leaders)]


def _partial(
    law: OptimumFit, compute: np.ndarray, values: np.ndarray, made: Sequence[OptimumFit], name: str, common: dict[str, Any]
) -> LawVerdict:
    """A reported law: identified, or what it leaves open (a plateau beyond the range, a step's slope)."""
    low, high = float(compute.min()), float(compute.max())
    x = np.log10(compute)
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
    # A plateau is reached where the law sits on it at the two material points at that end: one point on it
    # is where the law was made to bend, not a level the data show twice.
    pair = optimum_curve(x[[0, 1, -2, -1]] if len(x) > 1 else x[[0, 0, 0, 0]], law.L, law.k, law.log10_c0, law.b)
    open_top = bool(np.max(np.abs(law.b + law.L - pair[2:])) > NO_CHANGE)
    open_bottom = bool(np.max(np.abs(pair[:2] - law.b)) > NO_CHANGE)
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
