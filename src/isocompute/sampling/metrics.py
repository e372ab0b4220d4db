"""The study's metrics over k samples per problem: avg@k, best@k (coverage), worst@k (sharpening).

All three are computed from per-problem correct counts, the one table that every evaluation keeps, so the
metrics can be recomputed later (and resampled over problems for the bootstrap) without sampling again.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def metric_names(k: int) -> tuple[str, str, str]:
    """Column names of the metrics at k, in the paper's notation."""
    return f"avg@{k}", f"best@{k}", f"worst@{k}"


def per_problem(n_correct: np.ndarray | pd.Series, k: int) -> dict[str, np.ndarray]:
    """Each metric's value per problem (its mean over problems is the metric): correct fraction, any, all."""
    counts = np.asarray(n_correct)
    if counts.size and (counts.min() < 0 or counts.max() > k):
        raise ValueError(f"correct counts must lie in [0, {k}]")
    avg, best, worst = metric_names(k)
    return {avg: counts / k, best: (counts > 0).astype(float), worst: (counts == k).astype(float)}


def summarize_counts(n_correct: np.ndarray | pd.Series, k: int) -> dict[str, float]:
    """avg@k, best@k and worst@k from per-problem counts of correct samples out of k."""
    if np.asarray(n_correct).size == 0:
        raise ValueError("no problems to summarize")
    return {name: float(values.mean()) for name, values in per_problem(n_correct, k).items()}
