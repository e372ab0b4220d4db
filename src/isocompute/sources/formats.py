"""The formats a source can be in, which one a path is, and the one entry from sources to the evaluation
table (`import_source`, `read_source`).

A format is detected only where the path can be nothing else (a panel export's `Step` and `<run> - <metric>`
columns, event files, `trainer_state.json`, an MLflow store); a folder holding two kinds of log (a TRL
output folder with event files in it) or a long table without the evaluation table's columns needs
`--format`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from isocompute.files import read_table
from isocompute.fits.table_fit import REQUIRED, InputError
from isocompute.sources import mlflow, table, tensorboard, trl, wandb
from isocompute.sources.evaluations import evaluation_rows
from isocompute.sources.runs import SETTINGS, RunLog, RunSettings, run_settings

FORMATS = ("wandb-csv", "wandb-history", "tensorboard", "mlflow", "trl", "table")
TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")


@dataclasses.dataclass(frozen=True)
class Imported:
    """A source read as the evaluation table, and what the import mapped, to print."""

    table: pd.DataFrame
    settings: dict[str, RunSettings]
    tokens: dict[str, str]
    skipped: list[str]
    formats: dict[str, str]

    def mapping(self) -> list[str]:
        """What was mapped, a line each: the sources, runs, grid, seeds, steps, metric columns and tokens."""
        runs = self.table.groupby("run", sort=False)
        metrics = [c for c in self.table.columns if c not in (*REQUIRED, "seed")]
        lines = [f"source {path}: {kind}" for path, kind in self.formats.items()]
        for name, rows in runs:
            run = self.settings[name]
            origins = "; ".join(
                f"{', '.join(key for key in SETTINGS if run.origin.get(key) == origin)} from {origin}"
                for origin in dict.fromkeys(run.origin[key] for key in SETTINGS if key in run.origin)
            )
            steps = rows["step"].astype(int).tolist()
            lines.append(
                f"run {name!r}: n {run.n}, b_problem {run.b_problem}, seed {_seed(run.seed)} ({origins}); "
                f"{len(steps)} steps {steps[0]}..{steps[-1]}"
            )
        lines.append(f"runs {len(self.settings)}; n {sorted({r.n for r in self.settings.values()})}; "
                     f"b_problem {sorted({r.b_problem for r in self.settings.values()})}; "
                     f"seeds {sorted({_seed(r.seed) for r in self.settings.values()}, key=str)}")  # fmt: skip
        lines.append(f"metric columns {metrics}")
        for how in dict.fromkeys(self.tokens.values()):
            named = [name for name, said in self.tokens.items() if said == how]
            lines.append(f"compute: {how} ({len(named)} of {len(self.tokens)} runs)")
        if self.skipped:
            lines.append(f"skipped (not in --map): {self.skipped}")
        return lines


def _seed(seed: int | None) -> int | str:
    return "unknown" if seed is None else seed


def detect(source: str) -> str:
    """The format of one source where only one fits; refused, naming what it found, otherwise."""
    if mlflow.is_tracking_uri(source):
        return "mlflow"
    path = Path(source)
    if not path.exists():
        raise InputError(f"{source}: no such file or folder")
    if path.is_file():
        return _file_format(path)
    found = []
    if next(path.rglob(tensorboard.EVENTS), None) is not None:
        found.append("tensorboard")
    if next(path.rglob(trl.STATE), None) is not None:
        found.append("trl")
    if path.name == "mlruns" or any(meta.parent.parent == path for meta in path.glob("*/meta.yaml")):
        found.append("mlflow")
    if wandb.history_files(path):
        found.append("wandb-history")
    if len(found) != 1:
        said = f"it holds logs of {found}" if found else "it holds no log IsoCompute reads"
        raise InputError(f"{source}: {said}; name its format with --format ({', '.join(FORMATS)})")
    return found[0]


def _file_format(path: Path) -> str:
    if path.name.startswith("events.out.tfevents."):
        return "tensorboard"
    if path.name == trl.STATE:
        return "trl"
    if path.suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"{path}: not a file IsoCompute reads; name its format with --format ({', '.join(FORMATS)})"
        )
    try:
        columns = [str(c) for c in read_table(path).columns]
    except (FileNotFoundError, ValueError) as error:
        raise InputError(str(error)) from None
    if wandb.is_panel_export(columns):
        return "wandb-csv"
    if any(step in columns for step in wandb.HISTORY_STEPS):
        return "wandb-history"
    if set(REQUIRED) <= set(columns):
        return "table"
    raise InputError(
        f"{path}: a table that is neither a W&B export nor an evaluation table (columns {columns[:8]}); "
        "read it with --format table --columns run=<column>,step=<column>"
    )


def _readers(columns: Mapping[str, str]) -> dict[str, Callable[[list[str]], list[RunLog]]]:
    paths: Callable[[list[str]], list[Path]] = lambda sources: [Path(source) for source in sources]
    return {
        "wandb-csv": lambda sources: wandb.read_panel_exports(paths(sources)),
        "wandb-history": lambda sources: wandb.read_histories(paths(sources)),
        "tensorboard": lambda sources: tensorboard.read_event_folders(paths(sources)),
        "mlflow": mlflow.read_stores,
        "trl": lambda sources: trl.read_output_folders(paths(sources)),
        "table": lambda sources: table.read_long_tables(paths(sources), dict(columns)),
    }


def import_source(
    paths: Sequence[str],
    format: str | None = None,
    metrics: Sequence[str] = (),
    run_map: str | None = None,
    name_pattern: str | None = None,
    columns: Mapping[str, str] | None = None,
) -> Imported:
    """The evaluation table of one or more sources (run, n, b_problem, seed, step, compute_rollouts,
    compute_tokens, then `metrics` as the source names them), and what was mapped."""
    if format is not None and format not in FORMATS:
        raise InputError(f"--format {format!r}: one of {list(FORMATS)}")
    formats = {str(path): format or detect(str(path)) for path in paths}
    readers = _readers(columns or {})
    logs = [
        log
        for kind in dict.fromkeys(formats.values())
        for log in readers[kind]([p for p, f in formats.items() if f == kind])
    ]
    _refuse_repeated_names(logs)
    if not metrics:
        logged = sorted({str(c) for log in logs for c in log.history.columns if c != "step"})
        raise InputError(f"name the evaluation column(s) with --metric; the source logs {logged}")
    settings, skipped = run_settings(logs, run_map, name_pattern)
    rows, tokens = [], {}
    for log in logs:
        if log.name in settings:
            part, tokens[log.name] = evaluation_rows(log, settings[log.name], list(metrics))
            rows.append(part)
    # One order whatever the source's: by the grid, then the run, then the step.
    evals = pd.concat(rows, ignore_index=True).sort_values(
        ["b_problem", "n", "run", "step"], ignore_index=True
    )
    if evals["seed"].isna().all():
        evals = evals.drop(columns="seed")
    return Imported(evals, settings, tokens, skipped, formats)


def _refuse_repeated_names(logs: list[RunLog]) -> None:
    """Two runs of one name (two exports of one run, or one name reused) cannot be told apart by a map."""
    seen: dict[str, str] = {}
    for log in logs:
        if log.name in seen:
            raise InputError(
                f"two runs are named {log.name!r} (in {seen[log.name]} and {log.origin}): "
                "keep one, or rename one"
            )
        seen[log.name] = log.origin


def read_source(
    paths: Sequence[str],
    format: str | None = None,
    metrics: Sequence[str] = (),
    run_map: str | None = None,
    name_pattern: str | None = None,
    columns: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The evaluation table of one or more sources (`import_source`'s table)."""
    return import_source(paths, format, metrics, run_map, name_pattern, columns).table
