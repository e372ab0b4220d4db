"""The paper's diagnostics of interference, for every study: what training does to the problems, by n.

Three readings of the same runs, beside the fits (the paper's Figs. 12 and 7 and its zero-variance share):

- the share of the sampled training problems with no correct sample out of `train_k` (pass@8 = 0) at each
  checkpoint, by n: Fig. 12's mass at pass rate 0 as a curve over compute. Under interference, small n
  strands problems there at intermediate compute;
- the share of zero-variance groups (TRL's `frac_reward_zero_std`, logged per step), averaged over a
  trailing window of compute at each checkpoint: the share of the batch that carries no gradient;
- n* by metric (Fig. 7) along the frontier: avg@k, best@k (coverage) and worst@k (sharpening).

Both shares have a base-model reference from the difficulty table's counts (c correct of m samples per
problem): the unbiased estimates of (1 - p)^k and of p^n + (1 - p)^n, the chance that k samples all fail
and that a group of n is all equal, averaged over the problems; they need k, n <= m. Unbiased per
problem, but a set bucketed on those same counts (Easy: avg@16 in [0.3, 0.6]) was selected on them, so
the reference leans toward the bucket (measured on Easy: 0.004 expected with pass@8 = 0, 0.015-0.025 at
the first checkpoint of every run): read it as a lower bound on Easy, an upper one on Hard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from isocompute.fits.data_ablation import smoothed_reward

KEYS = ["run", "b_problem", "n", "seed", "step", "compute_rollouts"]
BASE_RUN = "base_model"


def unbiased_all_fail(n_correct: np.ndarray, n_samples: np.ndarray, k: int) -> np.ndarray:
    """Per problem, the unbiased estimate of (1 - p)^k from c correct of m samples: C(m - c, k) / C(m, k)
    (the chance that k of the m samples drawn without replacement are all wrong); NaN where m < k."""
    n_correct, n_samples = np.asarray(n_correct), np.asarray(n_samples)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = comb(n_samples - n_correct, k) / comb(n_samples, k)
    return np.where(n_samples >= k, value, np.nan)


def base_zero_std(n_correct: np.ndarray, n_samples: np.ndarray, n: int) -> float:
    """The expected share of zero-variance groups of n at the base model: the mean over problems of the
    unbiased estimate of p^n + (1 - p)^n (NaN where n exceeds the samples per problem)."""
    n_correct, n_samples = np.asarray(n_correct), np.asarray(n_samples)
    both = unbiased_all_fail(n_correct, n_samples, n) + unbiased_all_fail(n_samples - n_correct, n_samples, n)
    return float(np.mean(both)) if n <= n_samples.min() else float("nan")


def checkpoint_diagnostics(
    logs: Mapping[str, pd.DataFrame], pass_rates: Mapping[str, pd.DataFrame], window: float
) -> pd.DataFrame:
    """One row per run and checkpoint: the share of sampled training problems with no correct sample
    (`share_unsolved`, its binomial standard error beside it), with every sample correct (`share_solved`),
    the mean pass rate, and the share of zero-variance groups over the steps with compute in (C / window, C]."""
    rows = []
    for run, rates in pass_rates.items():
        if run not in logs:
            raise ValueError(f"run {run}: training pass rates but no training table")
        table = rates.groupby(KEYS, as_index=False).agg(
            problems=("id", "size"),
            share_unsolved=("n_correct", lambda c: float((c == 0).mean())),
            share_solved=("pass_rate", lambda p: float((p == 1).mean())),
            mean_pass_rate=("pass_rate", "mean"),
        )
        share = table["share_unsolved"]
        table["share_unsolved_se"] = np.sqrt(share * (1 - share) / table["problems"])
        log = logs[run].sort_values("step", ignore_index=True)
        zero_std = smoothed_reward(log.assign(reward=log["frac_reward_zero_std"]), window).set_axis(
            log["step"]
        )
        table["zero_std_share"] = zero_std.reindex(table["step"]).to_numpy()
        rows.append(table)
    if not rows:
        raise ValueError("no runs to diagnose")
    return pd.concat(rows, ignore_index=True).sort_values(
        ["n", "b_problem", "seed", "step"], ignore_index=True
    )


def base_rows(
    difficulty: pd.DataFrame, sampled_ids: Sequence[str], curves: pd.DataFrame, train_k: int
) -> pd.DataFrame:
    """The base model's expected shares at compute 0, one row per curve (b_problem, n) of the study:
    pass@train_k = 0 on the same sampled training problems, zero-variance groups of n over the whole set."""
    missing = sorted(set(sampled_ids) - set(difficulty["id"]))
    if missing:
        raise ValueError(f"training problems {missing[:5]} are not in the set's training table")
    sampled = difficulty.set_index("id").loc[list(sampled_ids)]
    unsolved = float(np.mean(unbiased_all_fail(sampled["n_correct"], sampled["n_samples"], train_k)))
    rows = []
    for b_problem, n in curves[["b_problem", "n"]].drop_duplicates().itertuples(index=False):
        rows.append(
            {
                "run": BASE_RUN,
                "b_problem": int(b_problem),
                "n": int(n),
                "step": 0,
                "compute_rollouts": 0,
                "problems": len(sampled),
                "share_unsolved": unsolved,
                "zero_std_share": base_zero_std(difficulty["n_correct"], difficulty["n_samples"], int(n)),
            }
        )
    return pd.DataFrame(rows)


def nstar_by_metric(study_fits: Mapping[str, Any]) -> pd.DataFrame:
    """n* (and B_problem* where the study varies it) along the frontier of each metric's fit in the
    study's headline compute measure, one row per measured compute point; `at_max` marks the optimum at
    the largest compute (Fig. 7's bar). A metric without a frontier gives no rows."""
    compute = study_fits["headline"]["compute"]
    rows = []
    for metric, by_compute in study_fits["fits"].items():
        fit = by_compute.get(compute)
        if fit is None:
            continue
        by = fit["by"]
        points = fit.get("optimum_points") or []
        for index, point in enumerate(points):
            resolved = point.get("resolved") or {}
            rows.append(
                {
                    "metric": metric,
                    "compute_measure": compute,
                    "compute": float(point["compute"]),
                    **{column: int(point[column]) for column in by},
                    **{f"{column}_resolved": bool(resolved.get(column, True)) for column in by},
                    "at_max": index == len(points) - 1,
                }
            )
    return pd.DataFrame(rows)
