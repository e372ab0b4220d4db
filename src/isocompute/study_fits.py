"""All fits of one study as JSON: `results/fits/<set>/<study>/fits.json`, and what `isocompute fit` writes.

For one metric and compute measure (`fit_study`): a sigmoid per curve, the frontier inside the measured
ranges, the optimum x* at every distinct measured compute value, the law of x*(C) where those points hold
one, bootstrap intervals with the share of replicas choosing each x*, and the held-out check of whether the
law predicts. `fit_configured_study` does this for avg@k, best@k and worst@k of a configured study,
bootstrapping the headline fit. Figures and the recommendation read only this JSON.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pandas as pd

from isocompute.analysis import FitOptions, StudyFit, curve_points, fit_curves, json_records
from isocompute.bootstrap import Replica, resample_evals
from isocompute.fitting import LAW_MIN_POINTS, FitFailure, OptimumFit, RewardFit, fit_law, fit_to_json, levels, parameter_intervals
from isocompute.frontier import Curve, distinct_computes
from isocompute.holdout import holdout_check
from isocompute.metrics import metric_names
from isocompute.studies import Study

# A compute point's optimum is resolved where at least this share of the bootstrap replicas choose it
# (within a factor 2).
RESOLVED_SHARE = 0.8


def fit_study(
    evals: pd.DataFrame,
    options: FitOptions,
    min_compute: float = 0.0,
    frontier_points: int = 60,
    replicas: Sequence[Replica] = (),
    holdout_decades: float = 0.0,
) -> dict[str, Any]:
    """The study's fits of one metric in one compute measure, as JSON.

    `replicas` are bootstrap replicas of `evals` (with the base model's value where it anchors the curves);
    each is refitted from the point estimate and gives intervals, a band on the frontier and the share of
    replicas choosing each optimum.
    """
    by = list(options.by)
    table = curve_points(evals, options.metric, options.compute, by)
    table = table[(table[options.compute] > 0) & (table[options.compute] >= min_compute)].reset_index(drop=True)
    measured = table[options.compute]
    grid = np.geomspace(measured.min(), measured.max(), frontier_points) if len(measured) else np.array([])
    at = distinct_computes(measured)
    point = fit_curves(table, options, grid, at)
    fitted = [
        fit_curves(
            curve_points(r.evals, options.metric, options.compute, by),
            replace(options, base_reward=r.base[options.metric]) if r.base and options.base_reward is not None else options,
            grid,
            at,
            start=point,
        )
        for r in replicas
    ]
    chosen = {column: np.vstack([_at(r.optimum, column, at) for r in fitted]) for column in by} if fitted else {}
    resolved = {column: _resolved(point.optimum[column].to_numpy(), chosen[column]) for column in chosen}
    for column, keep in resolved.items():
        _refit_laws(point, fitted, column, keep)
    result: dict[str, Any] = {
        "metric": options.metric,
        "compute": options.compute,
        "by": by,
        "points": options.points,
        "min_compute": min_compute,
        "base_reward": options.base_reward,
        "extrapolate": options.extrapolate,
        "bootstrap": {
            "resamples": len(fitted),
            "seeds_resampled": bool(replicas) and _seeds_resampled(evals, by),
            "base_resampled": bool(replicas) and replicas[0].base is not None and options.base_reward is not None,
        },
        "measured": table.to_dict(orient="records"),
        "curves": [_curve_json(curve, [r.curves[i].fit for r in fitted], by) for i, curve in enumerate(point.curves)],
        "frontier": json_records(point.envelope),
        "optimum_points": _optimum_points(point, chosen, resolved),
        "optimum": {column: _law_json(point, fitted, column, resolved.get(column)) for column in by},
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
    return entry


def _law_json(point: StudyFit, fitted: Sequence[StudyFit], column: str, keep: np.ndarray | None) -> dict[str, Any]:
    """The law with the levels and number of the points it was fitted to (the resolved ones, with a bootstrap)."""
    law = point.laws[column]
    replica_laws = [r.laws[column] for r in fitted]
    used = point.optimum[column].to_numpy() if keep is None else point.optimum[column].to_numpy()[keep]
    entry = {**fit_to_json(law), "levels": levels(used.tolist()), "points_used": len(used),
             "points_unresolved": 0 if keep is None else int((~keep).sum())}  # fmt: skip
    entry.update(parameter_intervals(law, replica_laws))
    if fitted:
        entry["replicas_failed"] = _failures(replica_laws)
    return entry


def _resolved(values: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Where at least `RESOLVED_SHARE` of the replicas choose an optimum within a factor 2 of the point
    estimate's (one step of the paper's power-of-two grid, the precision a recommendation is rounded to)."""
    with np.errstate(invalid="ignore"):
        close = np.abs(np.log2(chosen / values[None, :])) <= 1.0
    return close.mean(axis=0) >= RESOLVED_SHARE


def _refit_laws(point: StudyFit, fitted: Sequence[StudyFit], column: str, keep: np.ndarray) -> None:
    """Fit the law of the point estimate and of every replica to the resolved compute points only.

    Where the replicas disagree on the optimum, the data do not determine it there, and such a point is
    no evidence for (or against) a law; replicas use the same points so that their laws are comparable.
    A law that most replicas do not find again is the sample's, not the data's, and is not reported.
    """
    at = point.optimum["compute"].to_numpy()[keep]
    point.laws[column] = fit_law(at, point.optimum[column].to_numpy()[keep], column)
    law = point.laws[column]
    if isinstance(law, FitFailure) and law.kind in ("no_points", "too_few_points") and not keep.all():
        point.laws[column] = FitFailure(
            "unresolved",
            f"only {int(keep.sum())} of {len(keep)} compute points have an optimum that at least "
            f"{RESOLVED_SHARE:.0%} of bootstrap replicas place within a factor 2; a law needs {LAW_MIN_POINTS}",
        )
    start = point.laws[column] if isinstance(point.laws[column], OptimumFit) else None
    for replica in fitted:
        values = _at(replica.optimum, column, point.optimum["compute"].to_numpy())[keep]
        has = ~np.isnan(values)
        replica.laws[column] = fit_law(at[has], values[has], column, start)
    reproduced = np.mean([isinstance(r.laws[column], OptimumFit) for r in fitted])
    if start is not None and reproduced < RESOLVED_SHARE:
        point.laws[column] = FitFailure(
            "not_reproduced",
            f"the law is found in only {reproduced:.0%} of bootstrap replicas (needs {RESOLVED_SHARE:.0%}): "
            f"a law of this sample, not of the data's population",
        )


def _optimum_points(point: StudyFit, chosen: Mapping[str, np.ndarray], resolved: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """The optimum at each distinct measured compute, with the share of replicas choosing each value."""
    rows = json_records(point.optimum.drop(columns=["extrapolated"]))
    for index, row in enumerate(rows):
        if not chosen:
            continue
        row["shares"], row["resolved"] = {}, {}
        for column, matrix in chosen.items():
            values = matrix[:, index]
            values = values[~np.isnan(values)].astype(int)
            counts = Counter(values.tolist())
            row["shares"][column] = {str(value): counts[value] / len(values) for value in sorted(counts)}
            row["resolved"][column] = bool(resolved[column][index])
    return rows


def _at(optimum: pd.DataFrame, column: str, compute: np.ndarray) -> np.ndarray:
    """A replica's optimum at the point estimate's compute values (NaN where it has none)."""
    return optimum.set_index("compute")[column].reindex(compute).to_numpy(dtype=float)


def fit_configured_study(
    evals: pd.DataFrame,
    val_counts: pd.DataFrame,
    base: Mapping[str, float],
    study: Study,
    options: Mapping[str, Any],
    k: int,
    recipe: Mapping[str, Any],
    seed: int,
    base_counts: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Fit avg@k, best@k and worst@k of a study in each of its compute measures.

    The bootstrap (a refit per resample of problems, seeds and the base model's counts) runs for the
    headline metric in the study's first compute measure, the fit the figures' bands and the
    recommendation's intervals come from. Points below `options["min_compute"]` rollouts are dropped
    before fitting, so the same checkpoints are left out whichever measure the curve is drawn in.
    """
    keep = evals["compute_rollouts"] >= options["min_compute"]
    evals = evals[keep]
    counts = val_counts[val_counts["compute_rollouts"] >= options["min_compute"]]
    replicas = resample_evals(counts, k, options["bootstrap"], seed, study.by, base_counts)
    headline = (options["metric"], study.compute_measures[0])
    fits: dict[str, dict[str, Any]] = {}
    for metric in metric_names(k):
        fits[metric] = {
            compute: fit_study(
                evals,
                FitOptions(
                    metric=metric,
                    compute=compute,
                    by=tuple(study.by),
                    base_reward=float(base[metric]) if options["anchor_r0"] else None,
                    points=options["points"],
                    record_bin=options["record_bin"],
                    extrapolate=options["extrapolate"],
                ),
                frontier_points=options["frontier_points"],
                replicas=replicas if (metric, compute) == headline else (),
                holdout_decades=options["holdout_decades"],
            )
            for compute in study.compute_measures
        }
    return {
        "study": {**asdict(study), "name": study.name, "by": study.by, "fixed": study.fixed},
        "recipe": dict(recipe),
        "headline": {"metric": headline[0], "compute": headline[1]},
        "fits": fits,
    }
