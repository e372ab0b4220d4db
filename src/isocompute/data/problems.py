"""The problem table: the one shape every data source is turned into (`id`, `prompt`, `answer`).

The synthetic task writes it, and a user's own data (a local parquet/JSON file or a hub dataset id) is
read into it through Hugging Face `datasets`, so every later stage sees one format whatever the source.
Two source schemas are read: `problem_table` (already `id`, `prompt`, `answer`; a bad row is an error
naming it) and `guru`, the paper's Guru-Math (`data_source`, `prompt` as chat messages,
`reward_model.ground_truth`), where rows that cannot be used are excluded and reported by id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from datasets import load_dataset

from isocompute.data.table_schema import GURU_COLUMNS, LOCAL_FORMATS
from isocompute.data.table_schema import PROBLEM_COLUMNS as COLUMNS
from isocompute.errors import IsoComputeError
from isocompute.sampling.answers import answer_parses

SCHEMAS = ("problem_table", "guru")


class ProblemTableError(IsoComputeError, ValueError):
    """A problem table that later stages cannot use; the message names the file and the row."""


def validate_problem_table(table: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check columns, emptiness and uniqueness, and return the table with exactly the problem columns."""
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise ProblemTableError(
            f"{source}: missing column(s) {missing}; a problem table needs {list(COLUMNS)}"
        )
    table = table.loc[:, list(COLUMNS)].copy()
    for column in COLUMNS:
        empty = table[column].isna() | (table[column].astype(str).str.len() == 0)
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0])
            raise ProblemTableError(
                f"{source}: row {row} (id={table['id'].iloc[row]!r}) has an empty {column!r}"
            )
        table[column] = table[column].astype(str)
    for column in ("id", "prompt"):
        duplicated = table[column].duplicated()
        if duplicated.any():
            row = int(duplicated.to_numpy().nonzero()[0][0])
            raise ProblemTableError(f"{source}: row {row} repeats {column} {table[column].iloc[row]!r}")
    return table.reset_index(drop=True)


@dataclass(frozen=True)
class ImportedTable:
    """A source read into the problem table, with the rows left out and why (`id`, `row`, `reason`)."""

    problems: pd.DataFrame
    excluded: pd.DataFrame


def read_source(path_or_id: str, split: str = "train", data_files: str | None = None) -> pd.DataFrame:
    """A local file or a hub dataset (optionally one of its files) through `datasets`, as a DataFrame."""
    suffix = Path(path_or_id).suffix.lower()
    if Path(path_or_id).exists() and suffix in LOCAL_FORMATS:
        dataset = load_dataset(LOCAL_FORMATS[suffix], data_files=str(path_or_id), split="train")
    else:
        dataset = load_dataset(path_or_id, split=split, data_files=data_files)
    return dataset.to_pandas()


def load_problem_table(
    path_or_id: str,
    split: str = "train",
    schema: str = "problem_table",
    checker: str = "exact",
    data_files: str | None = None,
) -> ImportedTable:
    """Read a problem table from a local file or a hub dataset id with `datasets`, mapped and validated.

    With `schema="guru"`, rows without a single user turn, without a reference answer, with an answer
    the `checker` cannot read, or repeating an earlier prompt are excluded (the reason kept per id), so a
    few bad rows of a public dataset never stop a study; with `problem_table` they are errors.
    """
    raw = read_source(path_or_id, split, data_files)
    if schema == "problem_table":
        table = validate_problem_table(raw, path_or_id)
        for row, answer in enumerate(table["answer"]):
            if not answer_parses(answer, checker):
                raise ProblemTableError(
                    f"{path_or_id}: row {row} (id={table['id'].iloc[row]!r}) has answer {answer!r}, which "
                    f"problems.checker={checker!r} cannot read"
                )
        return ImportedTable(table, pd.DataFrame(columns=["id", "row", "reason"]))
    if schema == "guru":
        return _from_guru(raw, path_or_id, checker)
    raise ProblemTableError(f"problems.table.schema must be one of {list(SCHEMAS)}, not {schema!r}")


def _from_guru(raw: pd.DataFrame, source: str, checker: str) -> ImportedTable:
    missing = [c for c in GURU_COLUMNS if c not in raw.columns]
    if missing:
        raise ProblemTableError(f"{source}: missing Guru column(s) {missing}")
    width = len(str(max(len(raw) - 1, 0)))
    kept: list[dict[str, str]] = []
    excluded: list[dict[str, object]] = []
    seen: set[str] = set()
    for row, record in enumerate(raw.to_dict("records")):
        problem_id = f"{record['data_source']}-{row:0{width}d}"
        prompt = _user_turn(record["prompt"])
        answer = _ground_truth(record["reward_model"])
        reason = None
        if prompt is None:
            reason = "prompt is not a single user turn"
        elif answer is None:
            reason = "no reward_model.ground_truth"
        elif not answer_parses(answer, checker):
            reason = f"answer {answer!r} cannot be read by {checker}"
        elif prompt in seen:
            reason = "repeats an earlier prompt"
        if reason:
            excluded.append({"id": problem_id, "row": row, "reason": reason})
            continue
        seen.add(prompt)
        kept.append({"id": problem_id, "prompt": prompt, "answer": answer})
    problems = validate_problem_table(pd.DataFrame(kept, columns=list(COLUMNS)), source)
    return ImportedTable(problems, pd.DataFrame(excluded, columns=["id", "row", "reason"]))


def _user_turn(prompt: Any) -> str | None:
    """The text of a chat prompt that is exactly one user message (Guru's form), else None."""
    if isinstance(prompt, str):
        prompt = (
            json.loads(prompt) if prompt.lstrip().startswith("[") else [{"role": "user", "content": prompt}]
        )
    messages = list(prompt) if prompt is not None else []
    if len(messages) != 1 or not isinstance(messages[0], Mapping) or messages[0].get("role") != "user":
        return None
    content = messages[0].get("content")
    return str(content) if content else None


def _ground_truth(reward_model: Any) -> str | None:
    """`reward_model.ground_truth`; the compressed Guru release stores the struct as a JSON string."""
    if isinstance(reward_model, str):
        reward_model = json.loads(reward_model)
    if not isinstance(reward_model, Mapping):
        return None
    truth = reward_model.get("ground_truth")
    if truth is None or (isinstance(truth, float) and pd.isna(truth)):
        return None
    text = str(truth).strip()
    return text or None
