"""The problem table: the one shape every data source is turned into (`id`, `prompt`, `answer`).

The synthetic task writes it, and a user's own data (a local parquet/JSON file or a hub dataset id) is
read into it through Hugging Face `datasets`, so every later stage sees one format whatever the source.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from datasets import load_dataset

COLUMNS = ("id", "prompt", "answer")
_LOCAL_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}


class ProblemTableError(ValueError):
    """A problem table that later stages cannot use; the message names the file and the row."""


def validate_problem_table(table: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check columns, emptiness and uniqueness, and return the table with exactly the problem columns."""
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise ProblemTableError(f"{source}: missing column(s) {missing}; a problem table needs {list(COLUMNS)}")
    table = table.loc[:, list(COLUMNS)].copy()
    for column in COLUMNS:
        empty = table[column].isna() | (table[column].astype(str).str.len() == 0)
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0])
            raise ProblemTableError(f"{source}: row {row} (id={table['id'].iloc[row]!r}) has an empty {column!r}")
        table[column] = table[column].astype(str)
    for column in ("id", "prompt"):
        duplicated = table[column].duplicated()
        if duplicated.any():
            row = int(duplicated.to_numpy().nonzero()[0][0])
            raise ProblemTableError(f"{source}: row {row} repeats {column} {table[column].iloc[row]!r}")
    return table.reset_index(drop=True)


def load_problem_table(path_or_id: str, split: str = "train") -> pd.DataFrame:
    """Read a problem table from a local file or a hub dataset id with `datasets`, then validate it."""
    suffix = Path(path_or_id).suffix.lower()
    if Path(path_or_id).exists() and suffix in _LOCAL_FORMATS:
        dataset = load_dataset(_LOCAL_FORMATS[suffix], data_files=str(path_or_id), split="train")
    else:
        dataset = load_dataset(path_or_id, split=split)
    return validate_problem_table(dataset.to_pandas(), path_or_id)


def read_tables(paths: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """Concatenate parquet tables (per-shard or per-run pieces of one table)."""
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write a parquet table under a temporary name, then rename, so no reader sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    table.to_parquet(partial, index=False)
    partial.replace(path)
