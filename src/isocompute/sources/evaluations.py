"""A run's logged history as rows of the evaluation table: the steps where a metric is logged, with the
compute spent by then in rollouts and in sampled completion tokens.

Rollouts are counted as the pipeline counts them (step x b_problem x n) unless the log counts them itself.
Tokens are the logged mean completion length times the rollouts of the steps it covers, cumulated, as the
pipeline's training table cumulates them (`training.table.training_table`), so the paper's check of the
law in tokens (Appendix D) runs on an imported sweep too; where no length is logged, the tokens column is a
copy of the rollouts and the import says so.
"""

from __future__ import annotations

import pandas as pd

from isocompute.errors import plain
from isocompute.files import missing_columns
from isocompute.fits.table_fit import (
    COMPUTE_SPENT,
    METRIC,
    REQUIRED,
    STEP,
    InputError,
    Values,
    value_problems,
)
from isocompute.sources.runs import RunLog, RunSettings

# Mean completion length per rollout, as TRL (`completions/mean_length`, `train/...` in TensorBoard and W&B)
# and verl (`response_length/mean`) log it.
LENGTH_KEYS = ("completions/mean_length", "train/completions/mean_length", "response_length/mean")
LENGTH = Values(False, 0.0, float("inf"), "a completion's mean length in tokens")
SHOWN_STEPS = 5


def _steps(steps: pd.Series, values: pd.Series | None = None) -> str:
    """Steps as a run's log names them, the first few with their values, the rest counted."""
    shown = [
        f"{plain(step)!r}" + ("" if values is None else f" ({plain(values[i])!r})")
        for i, step in zip(steps.index[:SHOWN_STEPS], steps.iloc[:SHOWN_STEPS])
    ]
    more = f" and {len(steps) - SHOWN_STEPS} more" if len(steps) > SHOWN_STEPS else ""
    return f"step{'s' if len(steps) > 1 else ''} {', '.join(shown)}{more}"


def _checked(log: RunLog, rows: pd.DataFrame, column: str, values: Values) -> pd.Series:
    """One logged column as numbers, refused (naming the run, the column and the steps) where a value breaks
    `values`: `table_fit.value_problems`, as a table's rows are checked."""
    numbers, problems = value_problems(rows[column], values)
    for bad, problem in problems:
        if bad.any():
            raise InputError(
                f"{log.origin}: run {log.name!r}: column {column!r} {problem} "
                f"at {_steps(rows['step'][bad], rows[column])}"
            )
    return numbers


def _history(log: RunLog) -> pd.DataFrame:
    """The run's history with whole, non-negative steps, one row per step (a resumed run logs its steps
    again: the last value logged wins, as the trainer's own log keeps it)."""
    history = log.history.reset_index(drop=True)
    steps = _checked(log, history, "step", STEP)
    history = history.assign(step=steps.astype(int))
    merged = history.groupby("step", sort=True).last()  # last non-missing value of each key at each step
    return merged.reset_index()


def length_key(log: RunLog) -> str | None:
    """The column of the run's history that logs the mean completion length, if any."""
    return next((key for key in LENGTH_KEYS if key in log.history.columns), None)


def evaluation_rows(log: RunLog, settings: RunSettings, metrics: list[str]) -> tuple[pd.DataFrame, str]:
    """The run's rows of the evaluation table (steps where a metric is logged) and how its compute_tokens
    were obtained, for the import's printed mapping."""
    missing = missing_columns(metrics, [str(c) for c in log.history.columns])
    if missing:
        logged = sorted(str(c) for c in log.history.columns if c != "step")
        raise InputError(f"{log.origin}: run {log.name!r}: {missing}; it logs {logged}")
    history = _history(log)
    rows = history[history[metrics].notna().any(axis=1)].reset_index(drop=True)
    if rows.empty:
        raise InputError(f"{log.origin}: run {log.name!r} logs no value of {metrics}")
    batch = settings.b_problem * settings.n
    if "compute_rollouts" in history.columns:
        rollouts, counted = _checked(log, rows, "compute_rollouts", COMPUTE_SPENT), "as logged"
    else:
        rollouts, counted = rows["step"] * batch, "step x b_problem x n"
    if "compute_tokens" in history.columns:
        tokens, how = _checked(log, rows, "compute_tokens", COMPUTE_SPENT), "compute_tokens as logged"
    elif (key := length_key(log)) is not None:
        tokens, how = _tokens(log, history, rows, key, batch), f"logged {key!r} x rollouts, cumulated"
    else:
        tokens, how = rollouts.astype(float), "a copy of compute_rollouts (no completion length logged)"
    table = pd.DataFrame(
        {
            "run": log.name,
            "n": settings.n,
            "b_problem": settings.b_problem,
            "seed": settings.seed,
            "step": rows["step"],
            "compute_rollouts": rollouts,
            "compute_tokens": tokens,
        }
    )
    for metric in metrics:
        present = rows[metric].notna()
        table[metric] = _checked(log, rows[present], metric, METRIC).reindex(rows.index)
    return table[[*REQUIRED[:3], "seed", *REQUIRED[3:], *metrics]], f"rollouts {counted}; tokens {how}"


def _tokens(log: RunLog, history: pd.DataFrame, rows: pd.DataFrame, key: str, batch: int) -> pd.Series:
    """Tokens sampled through each of `rows`' steps: a logged mean length covers the steps since the one
    logged before it (TRL averages its logs over the logging interval), each step `batch` rollouts."""
    logged = history.loc[history[key].notna(), ["step", key]]
    length = _checked(log, logged, key, LENGTH).set_axis(logged["step"])
    last = int(rows["step"].max())
    beyond = rows["step"][rows["step"] > length.index.max()]
    if len(beyond):
        raise InputError(
            f"{log.origin}: run {log.name!r}: {key!r} is logged up to step {int(length.index.max())}, "
            f"so the tokens at {_steps(beyond)} are unknown"
        )
    per_step = length.reindex(range(1, last + 1)).bfill()
    # Step 0 is the base model's: no tokens sampled yet.
    cumulated = (per_step * batch).cumsum().reindex(rows["step"]).fillna(0.0)
    return pd.Series(cumulated.to_numpy(), index=rows.index)
