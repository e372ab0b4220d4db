"""One study's fit of one metric in one compute measure (`fit_study`): a sigmoid per curve, the frontier inside
the measured ranges, the optimum x* and its leaders at every distinct measured compute value
(`isocompute.fits.leaders`), the law of x*(C) through the leaders where the material points hold one (judged
from the bootstrap of the whole estimator, `isocompute.fits.law`), intervals with the share of replicas
choosing each x*, and the held-out check of whether the law predicts.

The pipeline (`fits_json.fit_configured_study`), `isocompute fit`, the adaptive sweep's rounds and replays and
the data ablations all fit through here; the file a configured study writes around these fits is `fits_json`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fits.bootstrap import Replica, residual_replicas
from isocompute.fits.curves import FitOptions, StudyFit, curve_points, fit_curves, json_records
from isocompute.fits.forms import FitFailure, Key, OptimumFit, RewardFit, fit_to_json, levels, parameter_intervals
from isocompute.fits.frontier import SAME_COMPUTE_DECADES, Curve, Settled, distinct_computes
from isocompute.fits.holdout import holdout_check
from isocompute.fits.law import LawVerdict, fit_leaders, judge_law
from isocompute.fits.leaders import CENSORED, ColumnLeaders, column_leaders, leading, replica_leading, resolved_at_once

# What the fits compute, named where the pipeline's fit rules take it as a param: library modules are not
# among Snakemake's rerun triggers, so a change of the fits' math renames it and every fit job (and what reads
# the fits) reruns, and nothing upstream (docs/guide/upgrading.md).
METHOD = "leaders with censored runs and simultaneous bands; curves that may fall after their peak (2026-12-06)"

def fit_study(
    evals: pd.DataFrame,
    options: FitOptions,
    min_compute: float = 0.0,
    frontier_points: int = 60,
    replicas: Sequence[Replica] = (),
    holdout_decades: float = 0.0,
    resamples: int = 0,
    seed: int = 0,
    settled: Mapping[Key, Settled] | None = None,
) -> dict[str, Any]:
    """The study's fits of one metric in one compute measure, as JSON.

    `replicas` are bootstrap replicas of `evals` from per-problem counts (with the base model's value where it
    anchors the curves); without them, `resamples` replicas redraw each curve from its own residuals
    (`bootstrap.residual_replicas`, drawn from `seed`). Each replica refits every curve from the point
    estimate, takes its own frontier at the same compute points and fits its own law: the intervals, the
    frontier's band, the share of replicas choosing each optimum and the law's verdict (`law.judge_law`)
    come from the whole estimator.

    `settled` names the curves a sweep's rule stopped with a judgement (`frontier.Settled`, from the adaptive
    sweep's stops): beyond its stop such a curve is no candidate, in the point estimate and every replica,
    where a run that merely ended is censored. The JSON says so on the curve (`settled`) and at every point
    beyond its stop (`optimum_points[].settled`).
    """
    by = list(options.by)
    table = _measured(curve_points(evals, options.metric, options.compute, by), options.compute, min_compute)
    measured = table[options.compute]
    grid = np.geomspace(measured.min(), measured.max(), frontier_points) if len(measured) else np.array([])
    at = distinct_computes(measured)
    point = fit_curves(table, options, grid, at, settled=settled)
    kind = "problems" if replicas else ("residuals" if resamples else None)
    if not replicas and resamples:
        replicas = residual_replicas(table, point.curves, by, options.compute, options.metric, resamples, seed)
    tables = [_measured(curve_points(r.evals, options.metric, options.compute, by), options.compute, min_compute) for r in replicas]
    fitted = [
        fit_curves(
            replica_table,
            replace(options, base_reward=r.base[options.metric]) if r.base and options.base_reward is not None else options,
            grid,
            at,
            start=point,
            settled=settled,
        )
        for r, replica_table in zip(replicas, tables)
    ]
    computes = point.optimum["compute"].to_numpy()
    aligned = [_aligned(point, r) for r in fitted]
    rewards = point.curve_rewards(_noise(table, tables, by, options))
    values = [v for v, _ in aligned]
    censored = ~np.isnan(point.censored)
    sets = {
        kind: leading(rewards, options.tolerance, values, simultaneous=kind == "band") for kind in ("leaders", "band")
    }
    leaders, band = (
        {column: column_leaders(point.keys, point.rewards, sets[kind], i, column, censored, rewards.ranges) for i, column in enumerate(by)}
        for kind in ("leaders", "band")
    )
    if fitted:
        leaders = {column: resolved_at_once(leaders[column], band[column]) for column in by}
    theirs = {
        column: [
            _censored_as(column_leaders(point.keys, r, replica_leading(r, options.tolerance), i, column), leaders[column])
            for _, r in aligned
        ]
        for i, column in enumerate(by)
    }
    chosen = {column: np.vstack([_at(r.optimum, column, computes) for r in fitted]) for column in by} if fitted else {}
    laws = {column: fit_leaders(computes, leaders[column]) for column in by}
    verdicts = {
        column: judge_law(
            computes,
            leaders[column],
            theirs[column] if fitted else None,
            [fit_leaders(computes, replica) for replica in theirs[column]],
            column,
            laws[column],
            band[column] if fitted else None,
        )
        for column in by
    }
    result: dict[str, Any] = {
        "metric": options.metric,
        "compute": options.compute,
        "by": by,
        "points": options.points,
        "min_compute": min_compute,
        "base_reward": options.base_reward,
        "extrapolate": options.extrapolate,
        "tolerance": options.tolerance,
        "compute_points": _compute_points(measured, computes),
        "bootstrap": {
            "resamples": len(fitted),
            "kind": kind,
            "seeds_resampled": kind == "problems" and _seeds_resampled(evals, by),
            "base_resampled": bool(replicas) and replicas[0].base is not None and options.base_reward is not None,
        },
        "measured": table.to_dict(orient="records"),
        "curves": [_curve_json(curve, [r.curves[i].fit for r in fitted], by) for i, curve in enumerate(point.curves)],
        "frontier": json_records(point.envelope),
        "optimum_points": _optimum_points(point, chosen, leaders, band),
        "optimum": {column: _law_json(point, verdicts[column], laws[column], column) for column in by},
        "optimum_at_max_compute": (
            {**{column: int(point.optimum[column].iloc[-1]) for column in by}, "compute": float(point.optimum["compute"].iloc[-1])}
            if len(point.optimum)
            else None
        ),
        "holdout": holdout_check(table, options, point, holdout_decades) if holdout_decades > 0 else None,
    }
    if fitted and len(point.envelope):
        bands = np.vstack([_on_grid(r.envelope, point.envelope["compute"]) for r in fitted])
        for row, low, high in zip(result["frontier"], *np.nanpercentile(bands, [2.5, 97.5], axis=0)):
            row["reward_low"], row["reward_high"] = float(low), float(high)
    return result


def _measured(table: pd.DataFrame, compute: str, min_compute: float) -> pd.DataFrame:
    """The points a fit reads: compute above 0 (the base model's point anchors the curves instead) and at
    least `min_compute`; the same for the point estimate and every replica."""
    return table[(table[compute] > 0) & (table[compute] >= min_compute)].reset_index(drop=True)


def _aligned(point: StudyFit, replica: StudyFit) -> tuple[np.ndarray, np.ndarray]:
    """A replica's values (measured rewards, censored values where a curve was not measured) and its measured
    rewards alone, in the point estimate's curve order (NaN rows for a curve it lacks)."""
    if not point.keys:
        return point.rewards, point.rewards
    missing = np.full(point.rewards.shape[1], np.nan)
    values = np.where(np.isnan(replica.rewards), replica.censored, replica.rewards)
    rows, measured = dict(zip(replica.keys, values)), dict(zip(replica.keys, replica.rewards))
    return (np.vstack([rows.get(key, missing) for key in point.keys]),
            np.vstack([measured.get(key, missing) for key in point.keys]))  # fmt: skip


def _censored_as(replica: ColumnLeaders, point: ColumnLeaders) -> ColumnLeaders:
    """A replica's leaders with the point estimate's censored points marked so: a replica's own leaders come
    from its measured curves only, and a point a censored run may lead is no evidence in any replica."""
    status = [CENSORED if theirs == CENSORED else own for own, theirs in zip(replica.status, point.status)]
    return replace(replica, status=status)


def _noise(table: pd.DataFrame, replicas: Sequence[pd.DataFrame], by: Sequence[str], options: FitOptions) -> np.ndarray | None:
    """Per curve (in key order), the noise of one measured point: the median over its points of their spread
    across the replicas (problems, seeds, or residuals redrawn), or None without replicas."""
    if not replicas:
        return None
    keys = [*by, "step"]
    stacked = pd.concat([r.set_index(keys)[options.metric] for r in replicas], axis=1)
    spread = stacked.std(axis=1, ddof=1).groupby(level=list(range(len(by)))).median()
    wanted = table.groupby(list(by)).size().index
    return spread.reindex(wanted).fillna(0.0).to_numpy(dtype=float)


def _compute_points(measured: pd.Series, computes: np.ndarray) -> dict[str, Any]:
    """How the measured compute values became the points where x* is read, and why there are fewer where so."""
    values = measured[measured > 0].to_numpy(dtype=float)
    entry: dict[str, Any] = {"measured_values": int(len(np.unique(values))), "points": int(len(computes)),
                             "group_decades": SAME_COMPUTE_DECADES}  # fmt: skip
    decades = int(np.ptp(np.floor(np.log10(values)))) + 1 if len(values) else 0
    if len(computes) < decades:
        entry["note"] = (
            f"{len(computes)} compute points with a frontier for {decades} decades of measured compute: the other "
            f"values have no curve measured there"
        )
    return entry


def _seeds_resampled(evals: pd.DataFrame, by: Sequence[str]) -> bool:
    return "seed" in evals and bool(evals.groupby(list(by))["seed"].nunique().max() > 1)


def _on_grid(envelope: pd.DataFrame, compute: pd.Series) -> np.ndarray:
    """A replica's frontier reward at the point estimate's compute values (NaN where it has none)."""
    return envelope.set_index("compute")["reward"].reindex(compute.to_numpy()).to_numpy(dtype=float)


def _failures(fits: Sequence[Any]) -> dict[str, int]:
    """How many replicas failed, by kind of failure."""
    return dict(Counter(fit.kind for fit in fits if isinstance(fit, FitFailure)))


def _curve_json(curve: Curve, replicas: Sequence[RewardFit | FitFailure], by: Sequence[str]) -> dict[str, Any]:
    low, high = curve.measured_range
    entry = {"key": dict(zip(by, curve.key)), "range": [low, high], **fit_to_json(curve.fit)}
    intervals = parameter_intervals(curve.fit, replicas)
    intervals.pop("samples", None)
    entry.update(intervals)
    if replicas:
        entry["replicas_failed"] = _failures(replicas)
    if curve.settled is not None:
        entry["settled"] = asdict(curve.settled)
    return entry


def _law_json(point: StudyFit, verdict: LawVerdict, central: OptimumFit | FitFailure, column: str) -> dict[str, Any]:
    """The law with its verdict (what it identifies, its agreement, rise and reversal), the levels the
    frontier's x* passes through, and the replicas' parameters and intervals."""
    values = point.optimum[column].to_numpy()
    entry = {**verdict.to_json(), **fit_to_json(verdict.law), "levels": levels(values.tolist())}
    if isinstance(verdict.law, FitFailure) and isinstance(central, OptimumFit):
        entry["central"] = asdict(central)
    entry.update(parameter_intervals(central, verdict.replicas))
    if verdict.replicas:
        entry["replicas_failed"] = _failures(verdict.replicas)
    return entry


def _optimum_points(
    point: StudyFit, chosen: Mapping[str, np.ndarray], leaders: Mapping[str, ColumnLeaders], band: Mapping[str, ColumnLeaders]
) -> list[dict[str, Any]]:
    """The optimum at each distinct measured compute: its leaders (every value within a material margin of the
    best), whether the point is evidence (`status`: material, every value leads, a single curve measured, or a
    censored run may lead; `resolved` where its leaders are a single value) and why not; with replicas, the
    leaders that hold at every point at once (`band`) and the share of replicas choosing each value."""
    rows = json_records(point.optimum.drop(columns=["extrapolated"]))
    for index, row in enumerate(rows):
        row["leaders"] = {column: lead.leaders[index] for column, lead in leaders.items()}
        row["status"] = {column: lead.status[index] for column, lead in leaders.items()}
        row["resolved"] = {column: bool(len(lead.leaders[index]) == 1 and lead.material[index]) for column, lead in leaders.items()}
        row["tie_reason"] = {column: lead.reasons[index] for column, lead in leaders.items()}
        notes = _settled_at(point.curves, row["compute"], list(leaders))
        if notes:
            row["settled"] = notes
        if chosen:
            row["band"] = {column: lead.leaders[index] for column, lead in band.items()}
            row["shares"] = {}
            for column, matrix in chosen.items():
                values = matrix[:, index]
                counts = Counter(values[~np.isnan(values)].astype(int).tolist())
                total = sum(counts.values())
                row["shares"][column] = {str(value): counts[value] / total for value in sorted(counts)}
    return rows


def _settled_at(curves: Sequence[Curve], compute: float, by: Sequence[str]) -> list[str]:
    """Why each curve a sweep's rule settled below `compute` is no candidate there (`frontier.Settled`)."""
    slack = 10**SAME_COMPUTE_DECADES
    return [
        f"{', '.join(f'{c} = {v}' for c, v in zip(by, curve.key))}: stopped by the sweep's rule "
        f"{curve.settled.rule!r} at C = {curve.settled.compute:.4g} rollouts, judged behind beyond it: no candidate here"
        for curve in curves
        if curve.settled is not None and compute > curve.measured_range[1] * slack
    ]


def _at(optimum: pd.DataFrame, column: str, compute: np.ndarray) -> np.ndarray:
    """A replica's optimum at the point estimate's compute values (NaN where it has none)."""
    return optimum.set_index("compute")[column].reindex(compute).to_numpy(dtype=float)
