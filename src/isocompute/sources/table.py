"""Long tables (CSV, JSON lines or parquet): one row per run and step, as any logger or script can write,
with a column map naming which of its columns is the run and which the step.

The map is `run=<column>,step=<column>`, and optionally `n=`, `b_problem=`, `seed=`, `compute_rollouts=`,
`compute_tokens=` (a column that holds one of the evaluation table's own columns under another name). A
run's n, b_problem and seed columns, where the table has them, are its config: one value per run.
"""

from __future__ import annotations

from pathlib import Path

from isocompute.errors import plain
from isocompute.files import missing_columns, read_table
from isocompute.fits.table_fit import InputError
from isocompute.sources.runs import SETTINGS, RunLog

MAPPED = ("run", "step", *SETTINGS, "compute_rollouts", "compute_tokens")


def column_map(text: str | None) -> dict[str, str]:
    """`--columns run=<column>,step=<column>,...` as {evaluation table's column: the table's column}."""
    if not text:
        return {}
    pairs = [item.partition("=") for item in text.split(",") if item.strip()]
    unknown = [ours for ours, _, _ in pairs if ours.strip() not in MAPPED]
    if unknown or any(not theirs.strip() for _, _, theirs in pairs):
        raise InputError(
            f"--columns {text!r}: give NAME=COLUMN pairs, NAME one of {list(MAPPED)} (not {unknown})"
        )
    return {ours.strip(): theirs.strip() for ours, _, theirs in pairs}


def read_long_tables(paths: list[Path], columns: dict[str, str]) -> list[RunLog]:
    """One run per value of the run column of each table."""
    logs = []
    for path in paths:
        try:
            table = read_table(path)
        except (FileNotFoundError, ValueError) as error:
            raise InputError(str(error)) from None
        renamed = table.rename(columns={theirs: ours for ours, theirs in columns.items()})
        missing = missing_columns(["run", "step"], [str(c) for c in renamed.columns])
        if missing:
            raise InputError(f"{path}: {missing}; name them with --columns run=<column>,step=<column>")
        for run, rows in renamed.groupby("run", sort=False):
            config = {}
            for key in (key for key in SETTINGS if key in rows.columns):
                values = rows[key].dropna().unique()
                if len(values) > 1:
                    raise InputError(
                        f"{path}: run {run!r} has several values of {key!r}: "
                        f"{plain(sorted(values))}"
                    )
                if len(values):
                    config[key] = plain(values[0])
            history = rows.drop(columns=["run", *(key for key in SETTINGS if key in rows.columns)])
            logs.append(RunLog(str(run), history.reset_index(drop=True), config, str(path)))
    return logs
