"""A configured study's fits file, `results/fits/<set>/<study>/fits.json`, and its shape: the study, its learning
rate rule, the headline fit and, per metric and compute measure, one study fit (`isocompute.fits.study_fit`).
`isocompute fit` writes the same shape for one table (`table_fit`). Figures and the recommendation read only
this JSON (docs/reference/fits.md, "Fits JSON").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import Key
from isocompute.fits.frontier import Settled
from isocompute.fits.study_fit import fit_study
from isocompute.sampling.metrics import metric_names
from isocompute.study.studies import Study


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
    settled: Mapping[Key, Settled] | None = None,
) -> dict[str, Any]:
    """Fit avg@k, best@k and worst@k of a study in each of its compute measures.

    Every fit is bootstrapped with the same replicas (resamples of problems, seeds and the base model's
    counts), since each law's verdict comes from its replicas; the headline metric in the study's first
    compute measure is the fit the recommendation reads. Points below `options["min_compute"]` rollouts are dropped
    before fitting, so the same checkpoints are left out whichever measure the curve is drawn in.

    `settled`: the arms an adaptive sweep's rule stopped (`adaptive.decisions.settled_of_rounds`), no candidates
    beyond their stops in the fit the rule decided on (the headline metric in rollouts) only: the rule judged
    them there, so in every other metric and measure they are runs that ended (censored).
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
                FitOptions.from_config(options, metric, compute, study.by, float(base[metric]) if options["anchor_r0"] else None),
                min_compute=options["min_compute"],
                frontier_points=options["frontier_points"],
                replicas=replicas,
                holdout_decades=options["holdout_decades"],
                settled=settled if (metric, compute) == (options["metric"], "compute_rollouts") else None,
            )
            for compute in study.compute_measures
        }
    return {
        "study": {**asdict(study), "name": study.name, "by": study.by, "fixed": study.fixed},
        "learning_rate": dict(learning_rate),
        "headline": {"metric": headline[0], "compute": headline[1]},
        "fits": fits,
    }
