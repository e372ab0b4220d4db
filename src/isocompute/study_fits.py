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

from isocompute.fitted_study import FitOptions, StudyFit, curve_points, fit_curves, json_records
from isocompute.bootstrap import Replica, resample_evals
from isocompute.fitting import (
    FitFailure,
    OptimumFit,
    RewardFit,
    direction,
    fit_optimum,
    fit_to_json,
    levels,
    optimum_name,
    parameter_intervals,
    reversals,
)
from isocompute.frontier import Curve, distinct_computes
from isocompute.holdout import holdout_check
from isocompute.metrics import metric_names
from isocompute.studies import Study
from isocompute.ties import RESOLVED_SHARE, Ties, bootstrap_ties, law_of_resolved, reversal_share

# Points of the dense grid on which a replica's law is compared with the point estimate's.
LAW_COMPARISON_POINTS = 50


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
    computes = point.optimum["compute"].to_numpy()
    chosen = {column: np.vstack([_at(r.optimum, column, computes) for r in fitted]) for column in by} if fitted else {}
    ties = {
        column: bootstrap_ties(point.optimum[column].to_numpy(), chosen[column], column) if fitted else point.ties[column]
        for column in by
    }
    through = {column: _refit_law(point, fitted, column, ties[column], chosen.get(column)) for column in by}
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
        "optimum_points": _optimum_points(point, chosen, ties),
        "optimum": {column: _law_json(point, fitted, column, ties[column], through[column]) for column in by},
        "optimum_at_max_compute": (
            {**{column: int(point.optimum[column].iloc[-1]) for column in by}, "compute": float(point.optimum["compute"].iloc[-1])}
            if len(point.optimum)
            else None
        ),
        "holdout": holdout_check(table, options, point, holdout_decades, ties) if holdout_decades > 0 else None,
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


def _law_json(
    point: StudyFit, fitted: Sequence[StudyFit], column: str, ties: Ties, through: list[dict[str, Any]]
) -> dict[str, Any]:
    """The law with the levels and number of the resolved points it was fitted to, the ties it left out and
    the reversals inside the noise it was fitted through."""
    law = point.laws[column]
    used = point.optimum[column].to_numpy()[ties.resolved]
    entry = {**fit_to_json(law), "levels": levels(used.tolist()), "points_used": len(used),
             "points_tied": int(ties.tie.sum()), "tie_rule": ties.rule, "reversals_fitted_through": through}  # fmt: skip
    entry.update(parameter_intervals(law, [r.laws[column] for r in fitted]))
    if fitted:
        entry["replicas_failed"] = _failures([r.laws[column] for r in fitted])
    return entry


def _refit_law(
    point: StudyFit, fitted: Sequence[StudyFit], column: str, ties: Ties, chosen: np.ndarray | None
) -> list[dict[str, Any]]:
    """Fit the law of the point estimate to its resolved compute points, and judge it by its replicas.

    Ties are no evidence for (or against) a law and are left out. A move of x* against the law's direction
    refuses the law only where the replicas resolve it (`ties.reversal_share`); one inside the noise is
    fitted through and returned. Each replica fits the same form to its own optimum at the same points, with
    no gates of its own (its noisy points are not the question): the law is reproduced where at least
    `RESOLVED_SHARE` of the replicas' laws predict x* within a factor 2 of the point estimate's across the
    range of the resolved points.
    """
    keep = ties.resolved
    at = point.optimum["compute"].to_numpy()[keep]
    values = [int(v) for v in point.optimum[column].to_numpy()[keep]]
    indices = np.flatnonzero(keep)
    sign = direction(values)
    through, noise = [], []
    for i in reversals(values):
        share = reversal_share(chosen, indices[i - 1], indices[i], sign)
        if share is not None and share < RESOLVED_SHARE:
            noise.append(i)
            through.append({"from": values[i - 1], "to": values[i], "compute": float(at[i]), "replicas": share})
    law = law_of_resolved(point.optimum["compute"].to_numpy(), point.optimum[column].to_numpy(), column, ties, None, noise)
    point.laws[column] = law
    if not isinstance(law, OptimumFit) or not fitted:
        return through
    grid = np.geomspace(at.min(), at.max(), LAW_COMPARISON_POINTS)
    agree = []
    for replica in fitted:
        replica_values = _at(replica.optimum, column, at)
        has = ~np.isnan(replica_values)
        made = fit_optimum(at[has], replica_values[has], start=law)
        replica.laws[column] = made
        agree.append(isinstance(made, OptimumFit) and bool(np.all(np.abs(np.log2(made(grid) / law(grid))) <= 1.0)))
    reproduced = float(np.mean(agree))
    if reproduced < RESOLVED_SHARE:
        point.laws[column] = FitFailure(
            "not_reproduced",
            f"the replicas' laws predict {optimum_name(column)} within a factor 2 of this law across C in "
            f"[{at.min():.3g}, {at.max():.3g}] in only {reproduced:.0%} of bootstrap replicas (needs "
            f"{RESOLVED_SHARE:.0%}): a law of this sample, not of the data's population",
        )
    return through


def _optimum_points(point: StudyFit, chosen: Mapping[str, np.ndarray], ties: Mapping[str, Ties]) -> list[dict[str, Any]]:
    """The optimum at each distinct measured compute: whether it is a tie (with its leaders and why) or
    resolved, and with a bootstrap the share of replicas choosing each value."""
    rows = json_records(point.optimum.drop(columns=["extrapolated"]))
    for index, row in enumerate(rows):
        row["resolved"] = {column: bool(tie.resolved[index]) for column, tie in ties.items()}
        row["leaders"] = {column: tie.leaders[index] for column, tie in ties.items()}
        row["tie_reason"] = {column: tie.reasons[index] for column, tie in ties.items()}
        if chosen:
            row["shares"] = {}
            for column, matrix in chosen.items():
                values = matrix[:, index]
                counts = Counter(values[~np.isnan(values)].astype(int).tolist())
                total = sum(counts.values())
                row["shares"][column] = {str(value): counts[value] / total for value in sorted(counts)}
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
    learning_rate: Mapping[str, Any],
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
                min_compute=options["min_compute"],
                frontier_points=options["frontier_points"],
                replicas=replicas if (metric, compute) == headline else (),
                holdout_decades=options["holdout_decades"],
            )
            for compute in study.compute_measures
        }
    return {
        "study": {**asdict(study), "name": study.name, "by": study.by, "fixed": study.fixed},
        "learning_rate": dict(learning_rate),
        "headline": {"metric": headline[0], "compute": headline[1]},
        "fits": fits,
    }
