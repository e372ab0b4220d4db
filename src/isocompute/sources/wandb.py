"""Weights & Biases, read from what its users can save without the package: a panel's "Export CSV" and run
histories saved from the public API (`run.history()` / `run.scan_history()`) with each run's config.

A panel export is wide: the panel's x-axis first (`Step`, or the metric chosen as the x-axis, such as
`train/global_step`), then per run `<run> - <metric>` with `__MIN` and `__MAX` beside it (the panel's
smoothing band, not values of the run), blank where a run logged nothing at that step. It
carries no config, so its runs take their n and b_problem from a run map or their names. A history is long,
one row per logged step, its step `_step` (verl logs with the trainer's step) or, where transformers logged
it, `train/global_step` (W&B's own counter then counts calls, not optimizer steps); its config sits beside
it as W&B writes it (`config.yaml`: `key: {desc: ..., value: ...}`) or as JSON.

W&B's offline run folders (`wandb/offline-run-*`) are read by no public API without syncing them to a
server (docs/reference/sources.md): export them first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from isocompute.files import read_table
from isocompute.fits.table_fit import InputError
from isocompute.sources.runs import RunLog, flat

PANEL_STEP = "Step"  # the panel's x-axis as the web app names its default
BAND = ("__MIN", "__MAX")
SEPARATOR = " - "
# The history's step: transformers' own where it logged one, else W&B's.
HISTORY_STEPS = ("train/global_step", "_step")
HISTORY_NAMES = ("history.csv", "history.jsonl", "history.parquet")
CONFIG_NAMES = ("config.yaml", "config.json")
# W&B's bookkeeping in a history: not values the run logged.
HISTORY_BOOKKEEPING = ("_runtime", "_timestamp", "_wandb")


def _read(path: Path) -> pd.DataFrame:
    try:
        return read_table(path)
    except (FileNotFoundError, ValueError) as error:
        raise InputError(str(error)) from None


def is_panel_export(columns: list[str]) -> bool:
    """Whether a table's columns are a W&B panel export's: an x-axis, then only `<run> - <metric>` columns."""
    return len(columns) > 1 and all(SEPARATOR in column for column in columns[1:])


def read_panel_exports(paths: list[Path]) -> list[RunLog]:
    """The runs of one or more panel exports (one metric per panel, so one file per metric), each run's
    columns of every file merged by step."""
    pieces: dict[str, list[pd.DataFrame]] = {}
    origins: dict[str, list[str]] = {}
    for path in paths:
        table = _read(path)
        columns = [str(c) for c in table.columns]
        if not is_panel_export(columns):
            raise InputError(
                f"{path}: not a W&B panel export (an x-axis such as {PANEL_STEP!r}, "
                f"then '<run>{SEPARATOR}<metric>' columns); "
                f"its columns are {columns[:8]}"
            )
        for column in columns[1:]:
            if column.endswith(BAND):
                continue
            run, _, metric = column.rpartition(SEPARATOR)
            piece = table[[columns[0], column]].dropna(subset=[column])
            pieces.setdefault(run, []).append(piece.set_axis(["step", metric], axis=1))
            origins.setdefault(run, []).append(str(path))
    return [
        RunLog(run, pd.concat(frames, ignore_index=True), {}, ", ".join(dict.fromkeys(origins[run])))
        for run, frames in pieces.items()
    ]


def unwrapped_config(config: dict[str, Any]) -> dict[str, Any]:
    """W&B's `config.yaml` (`key: {desc: ..., value: ...}`, plus its own `_wandb` and `wandb_version`) as the
    run's plain config; a config saved as `run.config` is plain already."""
    plain = {}
    for key, value in config.items():
        if key in ("_wandb", "wandb_version"):
            continue
        plain[key] = value["value"] if isinstance(value, dict) and "value" in value else value
    return plain


def _config(history: Path) -> dict[str, Any]:
    """The config saved beside a history: `config.yaml` or `config.json` in its folder, or
    `<history stem>.config.yaml` / `.json` beside it; empty where there is none (a map then says)."""
    candidates = [history.with_name(f"{history.stem}.{name}") for name in CONFIG_NAMES]
    if history.name in HISTORY_NAMES:
        candidates = [history.with_name(name) for name in CONFIG_NAMES] + candidates
    for candidate in candidates:
        if candidate.is_file():
            text = candidate.read_text()
            try:
                config = yaml.safe_load(text) if candidate.suffix == ".yaml" else json.loads(text)
            except (yaml.YAMLError, ValueError) as error:
                raise InputError(f"{candidate}: not a readable config ({error})") from None
            return flat(unwrapped_config(config or {}))
    return {}


def history_files(path: Path) -> list[Path]:
    """The histories a source names: the file itself, or every `history.*` under a folder."""
    if path.is_file():
        return [path]
    return sorted(found for name in HISTORY_NAMES for found in path.rglob(name))


def read_histories(paths: list[Path]) -> list[RunLog]:
    """One run per history file, named by its folder (`<run>/history.csv`) or its stem (`<run>.csv`)."""
    logs = []
    for path in paths:
        files = history_files(path)
        if not files:
            raise InputError(f"{path}: no W&B history ({', '.join(HISTORY_NAMES)}) under it")
        for history_file in files:
            table = _read(history_file)
            step = next((column for column in HISTORY_STEPS if column in table.columns), None)
            if step is None:
                raise InputError(
                    f"{history_file}: a W&B history has a step column ({' or '.join(HISTORY_STEPS)}); "
                    f"its columns are {[str(c) for c in table.columns][:8]}"
                )
            kept = [c for c in table.columns if c not in (*HISTORY_STEPS, *HISTORY_BOOKKEEPING)]
            # Rows without the trainer's step (W&B's own, logged between the trainer's) are no step's values.
            history = table[kept].assign(step=table[step])[table[step].notna()]
            name = history_file.parent.name if history_file.name in HISTORY_NAMES else history_file.stem
            logs.append(RunLog(name, history, _config(history_file), str(history_file)))
    return logs
