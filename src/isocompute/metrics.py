"""The study's metrics over k samples per problem: avg@k, best@k (coverage), worst@k (sharpening).

All three are computed from per-problem correct counts, the one table that every evaluation keeps, so the
metrics can be recomputed later without sampling again.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def metric_names(k: int) -> tuple[str, str, str]:
    """Column names of the metrics at k, in the paper's notation."""
    return f"avg@{k}", f"best@{k}", f"worst@{k}"


def summarize_counts(n_correct: np.ndarray | pd.Series, k: int) -> dict[str, float]:
    """avg@k, best@k and worst@k from per-problem counts of correct samples out of k."""
    counts = np.asarray(n_correct)
    if counts.size == 0:
        raise ValueError("no problems to summarize")
    if counts.min() < 0 or counts.max() > k:
        raise ValueError(f"correct counts must lie in [0, {k}]")
    avg, best, worst = metric_names(k)
    return {
        avg: float(np.mean(counts / k)),
        best: float(np.mean(counts > 0)),
        worst: float(np.mean(counts == k)),
    }
