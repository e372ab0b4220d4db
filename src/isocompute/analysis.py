"""All fits of one configured study: every metric, every compute measure, with bootstrap intervals.

This is what `results/fits/<set>/<study>/fits.json` holds; the figures and the recommendation read only
this file and the evaluation tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from isocompute.bootstrap import resample_evals
from isocompute.fitting import fit_study
from isocompute.metrics import metric_names
from isocompute.studies import Study


def fit_configured_study(
    evals: pd.DataFrame,
    val_counts: pd.DataFrame,
    base: Mapping[str, float],
    study: Study,
    options: Mapping[str, Any],
    k: int,
    recipe: Mapping[str, Any],
    seed: int,
) -> dict[str, Any]:
    """Fit avg@k, best@k and worst@k of a study in each of its compute measures.

    The bootstrap (a refit per resample) runs for the headline metric in the study's first compute
    measure, the fit the figures' bands and the recommendation's intervals come from. Points below `options["min_compute"]` rollouts are dropped before fitting, so the same checkpoints
    are left out whichever measure (rollouts, tokens, steps) the curve is drawn in.
    """
    keep = evals["compute_rollouts"] >= options["min_compute"]
    evals = evals[keep]
    counts = val_counts[val_counts["compute_rollouts"] >= options["min_compute"]]
    replicas = resample_evals(counts, k, options["bootstrap"], seed)
    headline = (options["metric"], study.compute_measures[0])
    fits: dict[str, dict[str, Any]] = {}
    for metric in metric_names(k):
        fits[metric] = {
            compute: fit_study(
                evals,
                metric,
                compute,
                by=study.by,
                frontier_points=options["frontier_points"],
                base_reward=float(base[metric]) if options["anchor_r0"] else None,
                points=options["points"],
                record_bin=options["record_bin"],
                resampled=replicas if (metric, compute) == headline else (),
            )
            for compute in study.compute_measures
        }
    return {
        "study": {**asdict(study), "name": study.name, "by": study.by, "fixed": study.fixed},
        "recipe": dict(recipe),
        "headline": {"metric": headline[0], "compute": headline[1]},
        "fits": fits,
    }
