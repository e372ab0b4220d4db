"""Bootstrap over validation problems: replicas of the evaluation table for the fits' intervals.

The uncertainty of a frontier comes mostly from which few hundred problems were held out. A replica
draws the validation problems with replacement, the same draw for every run and checkpoint (so curves
stay paired), and recomputes each metric from the per-problem correct counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.metrics import per_problem

CHECKPOINT_KEYS = ["run", "problem_set", "b_problem", "n", "seed", "step", "compute_rollouts", "compute_tokens"]


def resample_evals(val_counts: pd.DataFrame, k: int, resamples: int, seed: int) -> list[pd.DataFrame]:
    """`resamples` replicas of the per-checkpoint metrics, each over a resampled set of problems."""
    if resamples == 0:
        return []
    keys = [column for column in CHECKPOINT_KEYS if column in val_counts.columns]
    ids = np.sort(val_counts["id"].unique())
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(ids), np.full(len(ids), 1 / len(ids)), size=resamples) / len(ids)
    values = per_problem(val_counts["n_correct"].to_numpy(), k)
    checkpoints = None
    replicated: dict[str, np.ndarray] = {}
    for name, per_row in values.items():
        matrix = val_counts.assign(value=per_row).pivot_table(index=keys, columns="id", values="value")
        matrix = matrix.reindex(columns=ids)
        if matrix.isna().any().any():
            raise ValueError("every checkpoint must be scored on the same validation problems")
        checkpoints = matrix.index.to_frame(index=False)
        replicated[name] = matrix.to_numpy() @ weights.T
    return [checkpoints.assign(**{name: m[:, r] for name, m in replicated.items()}) for r in range(resamples)]
