"""Bootstrap replicas of an evaluation table, resampling what really varies between repetitions of a study.

With per-problem counts (`resample_evals`), a replica draws the validation problems with replacement, the
same draw for every run, every checkpoint and the base model (so curves stay paired, and the base value
that anchors every curve moves with them), and recomputes each metric from the per-problem correct counts.
Where a curve has several seeds, the replica also draws that curve's seeds with replacement, so
seed-to-seed variation enters the intervals.

Without counts (`residual_replicas`), each curve is redrawn from its own fit and its own residuals: the
noise a curve shows about its sigmoid is all the table says about what would vary. Curves are redrawn
independently (the pairing through shared problems is unknown), which makes adjacent curves look less
alike than a paired draw would: wider, not narrower, intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isocompute.fits.forms import RewardFit
from isocompute.fits.frontier import Curve
from isocompute.sampling.metrics import per_problem

CHECKPOINT_KEYS = ["run", "problem_set", "b_problem", "n", "seed", "step", "compute_rollouts", "compute_tokens"]


@dataclass(frozen=True)
class Replica:
    """One resample: the per-checkpoint metrics, and the base model's metrics on the same problems."""

    evals: pd.DataFrame
    base: dict[str, float] | None


def _problem_matrix(counts: pd.DataFrame, keys: list[str], ids: np.ndarray, k: int, what: str) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per metric, a matrix of per-problem values: one row per checkpoint (or one for the base), a column per id."""
    values = per_problem(counts["n_correct"].to_numpy(), k)
    matrices, rows = {}, pd.DataFrame()
    for name, per_row in values.items():
        if keys:
            matrix = counts.assign(value=per_row).pivot_table(index=keys, columns="id", values="value")
        else:
            matrix = counts.assign(value=per_row).set_index("id")[["value"]].T
        matrix = matrix.reindex(columns=ids)
        if matrix.isna().any().any():
            raise ValueError(f"{what}: every checkpoint must be scored on the same validation problems")
        rows = matrix.index.to_frame(index=False) if keys else rows
        matrices[name] = matrix.to_numpy()
    return rows, matrices


def resample_evals(
    val_counts: pd.DataFrame,
    k: int,
    resamples: int,
    seed: int,
    by: Sequence[str] = ("n",),
    base_counts: pd.DataFrame | None = None,
) -> list[Replica]:
    """`resamples` replicas of the per-checkpoint metrics (and of the base model's, where its counts are given).

    `by` names the columns that key a curve: seeds are drawn per curve. The draws depend only on `seed`.
    """
    if resamples == 0:
        return []
    keys = [column for column in CHECKPOINT_KEYS if column in val_counts.columns]
    ids = np.sort(val_counts["id"].unique())
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(ids), np.full(len(ids), 1 / len(ids)), size=resamples) / len(ids)
    checkpoints, matrices = _problem_matrix(val_counts, keys, ids, k, "validation counts")
    replicated = {name: matrix @ weights.T for name, matrix in matrices.items()}
    base = None
    if base_counts is not None:
        if set(base_counts["id"]) != set(ids):
            raise ValueError("base model counts: not scored on the same validation problems as the runs")
        _, base_matrices = _problem_matrix(base_counts, [], ids, k, "base model counts")
        base = {name: (matrix @ weights.T)[0] for name, matrix in base_matrices.items()}
    rows = _seed_draws(checkpoints, list(by), resamples, rng)
    return [
        Replica(
            checkpoints.iloc[rows[r]].assign(**{name: m[rows[r], r] for name, m in replicated.items()}).reset_index(drop=True),
            {name: float(values[r]) for name, values in base.items()} if base else None,
        )
        for r in range(resamples)
    ]


def _seed_draws(checkpoints: pd.DataFrame, by: list[str], resamples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Per replica, the checkpoint rows it holds: for each curve, its seeds drawn with replacement.

    With one seed per curve every replica holds every row once.
    """
    everything = np.arange(len(checkpoints))
    if "seed" not in checkpoints or checkpoints.groupby(by)["seed"].nunique().max() <= 1:
        return [everything] * resamples
    curves = [
        {seed: rows.index.to_numpy() for seed, rows in group.groupby("seed")}
        for _, group in checkpoints.groupby(by)
    ]
    draws = []
    for _ in range(resamples):
        chosen = []
        for seeds in curves:
            names = sorted(seeds)
            chosen += [seeds[names[i]] for i in rng.integers(0, len(names), size=len(names))]
        draws.append(np.concatenate(chosen))
    return draws


def residual_replicas(
    table: pd.DataFrame, curves: Sequence[Curve], by: Sequence[str], compute: str, metric: str, resamples: int, seed: int
) -> list[Replica]:
    """`resamples` replicas of a table of curve points (one row per curve and step, `fitted_study.curve_points`):
    each point its curve's fitted value plus a residual drawn with replacement from that curve's residuals.
    A curve without a fit keeps its measured points plus normal noise of the spread of its successive
    differences / sqrt(2) (what one evaluation's noise would make of them). The draws depend only on `seed`."""
    rng = np.random.default_rng([seed, 7])
    fits = {curve.key: curve for curve in curves}
    measured, at = table[metric].to_numpy(dtype=float), table[compute].to_numpy(dtype=float)
    members: dict[tuple[int, ...], list[int]] = {}
    for index, row in enumerate(table[list(by)].itertuples(index=False)):
        members.setdefault(tuple(int(v) for v in row), []).append(index)
    # Per curve, once: its rows, its centre (the fit, or the points themselves) and how to redraw its noise.
    draws = []
    for key, indices in members.items():
        rows, fit = np.array(indices), fits[key].fit
        if isinstance(fit, RewardFit):
            centre = np.asarray(fit(at[rows]), dtype=float)
            draws.append((rows, centre, measured[rows] - centre, None))
        elif len(rows) >= 3:
            spread = np.std(np.diff(measured[rows][np.argsort(at[rows])]), ddof=1) / np.sqrt(2)
            draws.append((rows, measured[rows], None, spread))
    replicas = []
    for _ in range(resamples):
        values = measured.copy()
        for rows, centre, residuals, spread in draws:
            noise = rng.choice(residuals, size=len(rows)) if residuals is not None else rng.normal(0.0, spread, len(rows))
            values[rows] = centre + noise
        replicas.append(Replica(table.assign(**{metric: values}), None))
    return replicas
