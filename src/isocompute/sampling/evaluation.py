"""Evaluation of a run's checkpoints: avg@k, best@k and worst@k on validation, pass rates on training.

Every checkpoint is scored on the same validation problems with k samples each; the per-problem correct
counts are kept, so every metric (and any bootstrap over problems) can be recomputed without sampling.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from isocompute.sampling.generation import Sampler, score_problems
from isocompute.sampling.metrics import summarize_counts
from isocompute.study.grid import GridPoint


def summary_row(counts: pd.DataFrame, k: int) -> dict[str, float]:
    """The metrics of one checkpoint on one problem set."""
    return {
        **summarize_counts(counts["n_correct"], k),
        "mean_response_tokens": float(counts["mean_response_tokens"].mean()),
    }


def new_checkpoints(manifest: list[dict[str, object]], after_step: int) -> list[dict[str, object]]:
    """The checkpoints of a run's manifest past `after_step`: a rung of an adaptive sweep scores only what
    it added, so its evaluations and the earlier rungs' together are the run's, each checkpoint once."""
    return [checkpoint for checkpoint in manifest if int(checkpoint["step"]) > after_step]


def evaluate_checkpoints(
    make_sampler: Callable[[str], Sampler],
    manifest: list[dict[str, object]],
    run_dir: str,
    point: GridPoint,
    val_problems: pd.DataFrame,
    train_sample: pd.DataFrame | None,
    k: int,
    train_k: int,
    checker: str,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Score every checkpoint; return the tidy metrics table, validation counts and training pass rates.

    `val_problems` is the run's own validation set or any other (`extra_evaluation`); with no
    `train_sample` no training pass rates are sampled (an empty table is returned for them).
    """
    keys = {
        "run": point.run,
        "problem_set": point.problem_set,
        "b_problem": point.b_problem,
        "n": point.n,
        "seed": point.seed,
        # Empty for the set's own recipe and the default learning rate (the scaling study's runs).
        "recipe": point.recipe,
        "lr_rule": point.lr_rule,
        "lr_base": point.lr_base,
        "lr_batch_ref": point.lr_batch_ref,
        "n_baseline": point.n_baseline,
    }
    rows, val_counts, train_rates = [], [], []
    for checkpoint in manifest:
        sampler = make_sampler(f"{run_dir}/{checkpoint['path']}")
        at = {
            **keys,
            "step": checkpoint["step"],
            "compute_rollouts": checkpoint["compute_rollouts"],
            "compute_tokens": checkpoint["compute_tokens"],
        }
        counts = score_problems(sampler, val_problems, k, checker)
        rows.append({**at, **summary_row(counts, k)})
        val_counts.append(counts.assign(**at))
        if train_sample is not None:
            train_counts = score_problems(sampler, train_sample, train_k, checker)
            train_rates.append(train_counts.assign(pass_rate=train_counts["n_correct"] / train_k, **at))
        sampler.close()
    return (
        pd.DataFrame(rows),
        pd.concat(val_counts, ignore_index=True),
        pd.concat(train_rates, ignore_index=True) if train_rates else pd.DataFrame(),
    )
