"""`isocompute fit` on any evaluation table: the tables checked, the replicas drawn, the fits JSON built.

The pipeline fits a configured study (`fits_json.fit_configured_study`); a user with evaluations from
elsewhere, and the simulated policy's study, fit one table of one study. Both reach the same `fit_study`,
so a table fitted here and the same runs fitted by the pipeline give the same JSON schema (docs/reference/fits.md).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isocompute.errors import IsoComputeError, plain
from isocompute.files import missing_columns, read_table
from isocompute.fits.bootstrap import CHECKPOINT_KEYS, resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.leaders import DEFAULT_TOLERANCE
from isocompute.fits.study_fit import fit_study

REQUIRED = ["run", "n", "b_problem", "step", "compute_rollouts", "compute_tokens"]
# Columns of the pipeline's evaluations that tell a recipe ablation's runs from the grid's.
RUN_SETTINGS = ["recipe", "lr_rule", "lr_base", "lr_batch_ref", "n_baseline"]
COMPUTE = {"rollouts": "compute_rollouts", "tokens": "compute_tokens", "steps": "step"}
LOG = logging.getLogger(__name__)


class InputError(IsoComputeError, ValueError):
    """An input table the fit cannot use; the message names the file, the column and the rows."""


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
    tolerance: float = DEFAULT_TOLERANCE
    lr_base: float = 1e-6
    lr_batch_ref: int = 1024
    lr_rule: str = "sqrt"


@dataclasses.dataclass(frozen=True)
class Values:
    """What one column's values must be: numbers (whole where `integer`) in [low, high]; `why` is said with a
    value outside them."""

    integer: bool
    low: float
    high: float
    why: str


METRIC = Values(False, 0.0, 1.0, "a metric is a share of the validation problems")
COMPUTE_SPENT = Values(False, 0.0, np.inf, "compute counts from 0, the base model's point, which the fit leaves out")
STEP = Values(True, 0.0, np.inf, "steps count from 0, the base model's")
SIZE = Values(True, 1.0, np.inf, "a group size or batch counts problems or samples")
SEED = Values(True, -np.inf, np.inf, "any whole number")
SHOWN_ROWS = 5  # rows named in a message; the rest are counted


def _correct(k: int) -> Values:
    """`n_correct` of a problem sampled k times."""
    return Values(True, 0.0, float(k), f"correct samples out of --k {k}")


def _rows(index: pd.Index, values: pd.Series | None = None) -> str:
    """Rows as the user finds them in the file: data rows counted from 1 (in a CSV, line 1 is the header, so
    data row r is line r + 1), the first `SHOWN_ROWS` with their values, the rest counted."""
    shown = [str(i + 1) + ("" if values is None else f" ({_shown(values[i])})") for i in index[:SHOWN_ROWS]]
    more = f" and {len(index) - SHOWN_ROWS} more" if len(index) > SHOWN_ROWS else ""
    return f"data row{'s' if len(index) > 1 else ''} {', '.join(shown)}{more}"


def _shown(value: Any) -> str:
    """A cell as the user wrote it: text quoted (so an empty or blank one shows), a number as a number."""
    return repr(value) if isinstance(value, str) else str(value)


def read_columns(path: str, columns: list[str], table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The table at `path` with at least one row, refused with the missing columns named; `table`, where
    given, is that table already read (a source `isocompute import` read), named `path` in messages."""
    if table is None:
        try:
            table = read_table(path)
        except (FileNotFoundError, ValueError) as error:
            raise InputError(str(error)) from None
    missing = missing_columns(columns, list(table.columns))
    if missing:
        raise InputError(f"{path}: {missing}; it has {[str(c) for c in table.columns]}")
    if table.empty:
        raise InputError(f"{path}: the table has no rows")
    return table.reset_index(drop=True)


def _present(table: pd.DataFrame, path: str, column: str) -> pd.Series:
    """The column, refused where a cell is empty (or NaN, None: what pandas reads as no value)."""
    missing = table[column].isna()
    if missing.any():
        raise InputError(f"{path}: column {column!r} has no value at {_rows(table.index[missing])}")
    return table[column]


def value_problems(raw: pd.Series, values: Values) -> tuple[pd.Series, list[tuple[pd.Series, str]]]:
    """`raw` as numbers, and each way a value can break `values` (which values break it, and what they
    break), so that every reader of a table, a file's rows or a tracked run's steps, says the same of the
    same bad value."""
    numbers = pd.to_numeric(raw, errors="coerce")
    allowed = f"lie in [{values.low:g}, {values.high:g}]" if np.isfinite(values.high) else f"be at least {values.low:g}"
    return numbers, [
        (numbers.isna(), "holds non-numeric values"),
        (np.isinf(numbers), "holds infinite values"),
        ((numbers < values.low) | (numbers > values.high), f"must {allowed} ({values.why})"),
        ((numbers % 1 != 0) if values.integer else pd.Series(False, index=raw.index), "must hold whole numbers"),
    ]


def _checked(table: pd.DataFrame, path: str, column: str, values: Values) -> pd.Series:
    """The column as numbers, refused where a value is not a number, is missing or infinite, lies outside
    [low, high] or is not a whole number where one is needed."""
    raw = _present(table, path, column)
    numbers, problems = value_problems(raw, values)
    for bad, problem in problems:
        if bad.any():
            raise InputError(f"{path}: column {column!r} {problem} at {_rows(raw.index[bad], raw)}")
    return numbers


def without_duplicates(table: pd.DataFrame, path: str, key: list[str], compared: list[str], what: str) -> pd.DataFrame:
    """The table with repeated rows of one `key` dropped where they agree on every `compared` column (an
    export written twice, or overlapping exports concatenated: keeping both would weigh that point twice
    against its other seeds), a warning counting them; refused where they disagree, since nothing in the
    table says which of the two is right."""
    repeated = table[table.duplicated(key, keep=False)]
    if repeated.empty:
        return table
    for values, rows in repeated.groupby(key, sort=False):
        differ = [column for column in compared if rows[column].nunique(dropna=False) > 1]
        if differ:
            # Plain Python values: pandas' group keys are numpy scalars, whose repr names their type.
            named = ", ".join(f"{k} {v!r}" for k, v in zip(key, plain(values if isinstance(values, tuple) else (values,))))
            raise InputError(
                f"{path}: {named} appears at {_rows(rows.index)} with different values of {differ}: "
                f"keep one {what}"
            )
    dropped = table.index[table.duplicated(key)]
    LOG.warning("%s: dropped %d repeated row(s) of one %s with the same values: %s", path, len(dropped), what, _rows(dropped))
    return table.drop(index=dropped)


def read_evals(
    path: str, metric: str, by: Sequence[str], compute: str, table: pd.DataFrame | None = None
) -> pd.DataFrame:
    """An evaluation table checked before any fitting: every column the fit reads (the run, its curve key,
    the step, the compute measure and the metric) holds a legal value in every row, one evaluation per
    (run, step) and one curve per run. Rows without a value of the metric are dropped with a warning (a
    log exported from a trainer has a row for every step and the evaluation only at some); every other
    problem is refused with the file, the column and the rows named. `table` is the table at `path` where
    it is already read (`read_columns`)."""
    table = read_columns(path, list(dict.fromkeys([*REQUIRED, *by, metric])), table)
    unevaluated = table.index[table[metric].isna()]
    if len(unevaluated) == len(table):
        raise InputError(f"{path}: column {metric!r} has no value in any row")
    if len(unevaluated):
        LOG.warning("%s: dropped %d row(s) without a value of %r: %s", path, len(unevaluated), metric, _rows(unevaluated))
        table = table.drop(index=unevaluated)
    numeric = {metric: METRIC, "step": STEP, "n": SIZE, "b_problem": SIZE, **{column: SIZE for column in by}}
    if compute != "step":
        numeric[compute] = COMPUTE_SPENT
    table = checked_table(table, path, numeric, ["run"])
    for column in ("n", "b_problem"):
        several = table.groupby("run")[column].nunique()
        if (several > 1).any():
            run = several.index[several > 1][0]
            first = table[table["run"] == run].drop_duplicates(column)
            raise InputError(
                f"{path}: run {run!r} has several values of {column!r}, first at {_rows(first.index, table[column])}: "
                "a run trains one (B_problem, n); name each run apart"
            )
    return without_duplicates(table, path, ["run", "step"], list(numeric), "evaluation per run and step").reset_index(drop=True)


def checked_table(table: pd.DataFrame, path: str, numeric: dict[str, Values], named: list[str]) -> pd.DataFrame:
    """The table with its `numeric` columns checked and turned into numbers, its `named` columns (run names,
    problem ids) refused where a value is missing."""
    for column in named:
        _present(table, path, column)
    return table.assign(**{column: _checked(table, path, column, values) for column, values in numeric.items()})


def read_counts(path: str, k: int, by: Sequence[str], compute: str) -> pd.DataFrame:
    """A table of per-problem correct counts (`val_counts`) checked as `read_evals` checks an evaluation table:
    every column that keys a checkpoint (`bootstrap.CHECKPOINT_KEYS`: a replica's rows are its checkpoints),
    a problem id and `n_correct` in [0, k] in every row, one count per checkpoint and problem, and every
    checkpoint scored on the same problems (a replica draws the same problems for all)."""
    needed = ["id", "n_correct", "step", *by] + ([] if compute == "step" else [compute])
    table = read_columns(path, list(dict.fromkeys(needed)))
    checkpoint = [column for column in CHECKPOINT_KEYS if column in table.columns]
    keys = {**dict.fromkeys(COMPUTE.values(), COMPUTE_SPENT), "step": STEP, "n": SIZE, "b_problem": SIZE, "seed": SEED}
    keys.update({column: SIZE for column in by})
    numeric = {"n_correct": _correct(k), **{column: keys[column] for column in checkpoint if column in keys}}
    table = checked_table(table, path, numeric, ["id", *(column for column in checkpoint if column not in keys)])
    table = without_duplicates(table, path, [*checkpoint, "id"], ["n_correct"], "count per checkpoint and problem")
    ids = set(table["id"])
    for values, rows in table.groupby(checkpoint, sort=False):
        if len(rows) != len(ids):
            named = ", ".join(f"{c} {v!r}" for c, v in zip(checkpoint, values))
            absent = sorted(ids - set(rows["id"]), key=str)
            raise InputError(
                f"{path}: the checkpoint ({named}) at {_rows(rows.index)} is scored on {len(rows)} of the table's "
                f"{len(ids)} problems (not on {absent[:SHOWN_ROWS]}): every checkpoint must be scored on the same problems"
            )
    return table.reset_index(drop=True)


def read_base_counts(path: str, k: int, counts: pd.DataFrame) -> pd.DataFrame:
    """The base model's per-problem correct counts, one per problem id, on the problems of `counts`."""
    table = checked_table(read_columns(path, ["id", "n_correct"]), path, {"n_correct": _correct(k)}, ["id"])
    table = without_duplicates(table, path, ["id"], ["n_correct"], "count per problem")
    absent, extra = set(counts["id"]) - set(table["id"]), set(table["id"]) - set(counts["id"])
    if absent or extra:
        raise InputError(
            f"{path}: the base model is scored on other problems than the runs' counts: "
            f"{len(absent)} of theirs missing ({sorted(absent, key=str)[:SHOWN_ROWS]}), "
            f"{len(extra)} not theirs ({sorted(extra, key=str)[:SHOWN_ROWS]})"
        )
    return table.reset_index(drop=True)


def fit_table(job: TableFit, table: pd.DataFrame | None = None) -> dict[str, Any]:
    """The fits JSON of one study's evaluation table (one B_problem unless curves are keyed by it); `table`
    is the table `job.evals` names where it is already read (a source `isocompute import` read)."""
    by = job.by.split(",")
    compute = COMPUTE[job.compute]
    evals = read_evals(job.evals, job.metric, by, compute, table)
    settings = [c for c in RUN_SETTINGS if c in evals.columns]
    if settings and len(evals[settings].drop_duplicates()) > 1:
        raise InputError(f"{job.evals} mixes runs of several recipes or learning rates ({RUN_SETTINGS}): keep one")
    fixed = {}
    if "b_problem" not in by:
        values = plain(sorted(evals["b_problem"].unique()))
        if len(values) > 1:
            raise InputError(
                f"{job.evals} holds b_problem values {values}: keep one (fixed-B_problem study) or use --by b_problem,n"
            )
        fixed = {"b_problem": int(values[0])}
    if job.base_counts and not job.counts:
        raise InputError(f"--base-counts {job.base_counts}: the base model's counts are resampled with --counts; give both")
    replicas = []
    if job.counts:
        counts = read_counts(job.counts, job.k, by, compute)
        base_counts = read_base_counts(job.base_counts, job.k, counts) if job.base_counts else None
        replicas = resample_evals(counts, job.k, job.bootstrap, job.seed, by, base_counts)
    options = FitOptions(
        metric=job.metric,
        compute=compute,
        by=tuple(by),
        base_reward=job.base_reward,
        points=job.points,
        record_bin=job.record_bin,
        extrapolate=job.extrapolate,
        tolerance=job.tolerance,
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
