"""Data ablations (paper Figs. 14, 15, 20, 21): which problem sets the compute-optimal n is measured on.

The sets themselves are config expressions (`isocompute.pipeline.config.problem_sets`): size sweeps, mixtures of
buckets, and the extremely hard set (pass@k = 0). Each set's runs are fitted by the same studies as any
other set; this module adds what Fig. 14 compares them with: the training reward as TRL logs it per step,
smoothed over a window of compute, and the pass rate on a sample of the training set, fitted like the
validation metrics (`isocompute.fits.study_fit.fit_study`), so their frontiers and n*(C) sit beside the
validation ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fits.curves import FitOptions
from isocompute.fits.study_fit import fit_study
from isocompute.study.studies import Study

TRAIN_METRICS = {
    "train_reward": "training reward (TRL's per-step mean, smoothed)",
    "train_pass_rate": "pass rate on a training sample",
}


def smoothed_reward(log: pd.DataFrame, window: float) -> pd.Series:
    """Per step: the mean training reward over the steps whose compute lies in (C / window, C].

    A trailing window of a fixed factor of compute is as wide on the log-compute axis of the figures at
    every C, and uses no step after C, so the smoothed reward at a checkpoint is what was known there.
    """
    compute = log["compute_rollouts"].to_numpy(dtype=float)
    reward = pd.to_numeric(log["reward"], errors="coerce").to_numpy(dtype=float)
    starts = np.searchsorted(compute, compute / window, side="right")
    cumulative = np.concatenate([[0.0], np.nancumsum(reward)])
    counts = np.concatenate([[0], np.cumsum(~np.isnan(reward))])
    ends = np.arange(1, len(compute) + 1)
    with np.errstate(invalid="ignore"):
        return pd.Series((cumulative[ends] - cumulative[starts]) / (counts[ends] - counts[starts]), index=log.index)


def train_evals(
    logs: Mapping[str, pd.DataFrame], pass_rates: Mapping[str, pd.DataFrame], window: float
) -> pd.DataFrame:
    """One row per run and checkpoint: the smoothed training reward at the checkpoint's step and the mean
    pass rate of the training sample there, keyed like the evaluation tables (`run`, `b_problem`, `n`,
    `seed`, `step`, `compute_rollouts`)."""
    rows = []
    for run, rates in pass_rates.items():
        log = logs[run].sort_values("step", ignore_index=True)
        reward = smoothed_reward(log, window).set_axis(log["step"])
        keys = ["run", "b_problem", "n", "seed", "step", "compute_rollouts"]
        table = rates.groupby(keys, as_index=False)["pass_rate"].mean().rename(columns={"pass_rate": "train_pass_rate"})
        table["train_reward"] = reward.reindex(table["step"]).to_numpy()
        rows.append(table)
    return pd.concat(rows, ignore_index=True)


def fit_train_metrics(evals: pd.DataFrame, study: Study, fits: Mapping[str, Any], window: float) -> dict[str, Any]:
    """The study's fits of each training metric against compute in rollouts, as `fit_study` fits validation
    metrics (no anchor: the base model's training reward is not measured; no bootstrap: the training
    metrics are per-run means, not per-problem counts, so their laws say `not_judged`; the data ablation
    reads the frontier's n* at a compute point, `optimum_at`)."""
    result: dict[str, Any] = {"study": study.name, "window": window, "fits": {}}
    for metric in TRAIN_METRICS:
        options = FitOptions.from_config(fits, metric, "compute_rollouts", study.by)
        table = evals[evals["compute_rollouts"] >= fits["min_compute"]].dropna(subset=[metric])
        result["fits"][metric] = fit_study(table, options, frontier_points=fits["frontier_points"])
    return result


def optimum_at(fit: Mapping[str, Any], compute: float) -> int | None:
    """The fit's n* at the largest measured compute point not above `compute` (None without a frontier)."""
    points = [p for p in fit["optimum_points"] if p["compute"] <= compute * (1 + 1e-9)]
    return int(points[-1]["n"]) if points else None


def nstar_by_size(
    sizes: Sequence[int], validation: Sequence[Mapping[str, Any]], training: Sequence[Mapping[str, Any]], metric: str
) -> pd.DataFrame:
    """n* at the largest compute all sizes share, per set size, for the validation `metric` and each
    training metric: the data of Fig. 14's last panel."""
    fits = [v["fits"][metric]["compute_rollouts"] for v in validation]
    shared = min((max((p["compute"] for p in f["optimum_points"]), default=0.0) for f in fits), default=0.0)
    rows = []
    for size, val, train in zip(sizes, fits, training):
        rows.append({"size": size, "metric": f"validation {metric}", "n_star": optimum_at(val, shared), "compute": shared})
        for name in TRAIN_METRICS:
            rows.append({"size": size, "metric": name, "n_star": optimum_at(train["fits"][name], shared), "compute": shared})
    return pd.DataFrame(rows)


def data_figure_instances(
    problem_sets: Mapping[str, Mapping[str, Any]],
    data_studies: Mapping[str, str],
    extra_evaluation: Mapping[str, Sequence[str]],
    out_of_domain: Sequence[str],
) -> dict[str, list[tuple[str, str | None]]]:
    """Each data-ablation figure's instances (`fig14_train_vs_val_<sweep>`, ...), each with the (set, evaluation
    set) pairs it draws in order; an evaluation set of None is the set's own validation set. `problem_sets` are
    the resolved sets (`study.config.problem_sets`), `data_studies` the study each set with one is drawn from."""
    with_study = {name for name in problem_sets if name in data_studies}
    sweeps: dict[str, list[str]] = {}
    for name, settings in problem_sets.items():
        if settings["sweep"] and name in with_study:
            sweeps.setdefault(settings["sweep"], []).append(name)
    instances = {
        f"fig14_train_vs_val_{sweep}": [
            (n, None) for n in sorted(names, key=lambda n: problem_sets[n]["build"]["train_size"])
        ]
        for sweep, names in sweeps.items()
    }
    mixtures = sorted(n for n in with_study if problem_sets[n]["mix_of"])
    if mixtures:
        components = {c for n in mixtures for c in problem_sets[n]["mix_of"]}
        instances[f"fig15_mixtures_{data_studies[mixtures[0]]}"] = [
            *((n, on) for n in mixtures for on in [None, *extra_evaluation.get(n, [])]),
            *((n, None) for n in sorted(components & with_study)),
        ]
    for name in sorted(with_study):
        parts = problem_sets[name]["build"]["parts"]
        if len(parts) == 1 and "pass_at" in parts[0]:
            instances[f"fig20_extremely_hard_{name}"] = [(name, None)]
    for ood in out_of_domain:
        pairs = [
            pair
            for name in sorted(with_study)
            if ood in extra_evaluation.get(name, [])
            for pair in ((name, None), (name, ood))
        ]
        if pairs:
            instances[f"fig21_out_of_domain_{ood}"] = pairs
    return instances
