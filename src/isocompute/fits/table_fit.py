"""`isocompute fit` on any evaluation table: the columns checked, the replicas drawn, the fits JSON built.

The pipeline fits a configured study (`fits_json.fit_configured_study`); a user with evaluations from
elsewhere, and the simulated policy's study, fit one table of one study. Both reach the same `fit_study`,
so a table fitted here and the same runs fitted by the pipeline give the same JSON schema (docs/reference/fits.md).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from isocompute.errors import IsoComputeError
from isocompute.files import read_table
from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.fits_json import fit_study

REQUIRED = ["run", "n", "b_problem", "step", "compute_rollouts", "compute_tokens"]
# Columns of the pipeline's evaluations that tell a recipe ablation's runs from the grid's.
RUN_SETTINGS = ["recipe", "lr_rule", "lr_base", "lr_batch_ref", "n_baseline"]
COMPUTE = {"rollouts": "compute_rollouts", "tokens": "compute_tokens", "steps": "step"}


class InputError(IsoComputeError, ValueError):
    """An input table the fit cannot use; the message names the file and the column."""


@dataclasses.dataclass(frozen=True)
class TableFit:
    """One table's fit, as `isocompute fit` names its options (every field has the command's default)."""

    evals: str
    metric: str = "avg@4"
    by: str = "n"
    compute: str = "rollouts"
    counts: str | None = None
    k: int = 4
    bootstrap: int = 100
    seed: int = 0
    min_compute: float = 0.0
    frontier_points: int = 60
    base_reward: float | None = None
    base_counts: str | None = None
    extrapolate: bool = False
    holdout_decades: float = 0.5
    points: str = "all"
    record_bin: float = 0.01
    lr_base: float = 1e-6
    lr_batch_ref: int = 1024
    lr_rule: str = "sqrt"


def read_columns(path: str, columns: list[str]) -> pd.DataFrame:
    """The table at `path`, refused with the missing columns named."""
    try:
        table = read_table(path)
    except FileNotFoundError as error:
        raise InputError(str(error)) from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}")
    return table


def fit_table(job: TableFit) -> dict[str, Any]:
    """The fits JSON of one study's evaluation table (one B_problem unless curves are keyed by it)."""
    evals = read_columns(job.evals, [*REQUIRED, job.metric])
    settings = [c for c in RUN_SETTINGS if c in evals.columns]
    if settings and len(evals[settings].drop_duplicates()) > 1:
        raise InputError(f"{job.evals} mixes runs of several recipes or learning rates ({RUN_SETTINGS}): keep one")
    by = job.by.split(",")
    fixed = {}
    if "b_problem" not in by:
        values = sorted(evals["b_problem"].unique())
        if len(values) > 1:
            raise InputError(
                f"{job.evals} holds b_problem values {values}: keep one (fixed-B_problem study) or use --by b_problem,n"
            )
        fixed = {"b_problem": int(values[0])}
    base_counts = read_columns(job.base_counts, []) if job.base_counts else None
    replicas = []
    if job.counts:
        counts = read_columns(job.counts, [])
        replicas = resample_evals(counts, job.k, job.bootstrap, job.seed, by, base_counts)
    compute = COMPUTE[job.compute]
    options = FitOptions(
        metric=job.metric,
        compute=compute,
        by=tuple(by),
        base_reward=job.base_reward,
        points=job.points,
        record_bin=job.record_bin,
        extrapolate=job.extrapolate,
    )
    fit = fit_study(
        evals,
        options,
        min_compute=job.min_compute,
        frontier_points=job.frontier_points,
        replicas=replicas,
        holdout_decades=job.holdout_decades,
        resamples=0 if job.counts else job.bootstrap,
        seed=job.seed,
    )
    return {
        "study": {"kind": "cli", "name": Path(job.evals).stem, "by": by, "fixed": fixed},
        "learning_rate": {"lr_rule": job.lr_rule, "lr_base": job.lr_base, "lr_batch_ref": job.lr_batch_ref},
        "headline": {"metric": job.metric, "compute": compute},
        "fits": {job.metric: {compute: fit}},
    }
