"""MLflow tracking stores (a local `mlruns/` folder or any tracking URI), read through the mlflow client
(the `trackers` extra).

A run is an MLflow run, named by its run name; its metrics keep their keys (TRL's, through transformers'
`MLflowCallback`, are the trainer's log keys: `reward`, `completions/mean_length`, `eval_...`), each
metric's full history read with its steps; its params (TRL's arguments, text) are its config. MLflow 3
refuses to open a folder store unless `MLFLOW_ALLOW_FILE_STORE` is set, as the store is no longer written
by default; reading a store a sweep already wrote is what it was written for, so the reader sets it while
reading.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from isocompute.fits.table_fit import InputError
from isocompute.sources.runs import RunLog


def is_tracking_uri(source: str) -> bool:
    """Whether a source is an MLflow tracking URI rather than a path."""
    return "://" in source or source.startswith(("file:", "sqlite:", "databricks"))


def tracking_uri(source: str) -> str:
    """The tracking URI of a source: itself, or a local folder as a `file:` URI."""
    if is_tracking_uri(source):
        return source
    if not Path(source).is_dir():
        raise InputError(f"{source}: no such MLflow store (a folder such as mlruns/, or a tracking URI)")
    return Path(source).resolve().as_uri()


@contextmanager
def _file_store_allowed() -> Iterator[None]:
    saved = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = saved


def read_stores(sources: list[str]) -> list[RunLog]:
    """Every run of every experiment in each store."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise InputError(
            "reading MLflow needs the mlflow client: pip install 'isocompute[trackers]'"
        ) from None
    logs = []
    with _file_store_allowed():
        for source in sources:
            client = MlflowClient(tracking_uri=tracking_uri(source))
            experiments = client.search_experiments()
            runs = [
                run for experiment in experiments for run in client.search_runs([experiment.experiment_id])
            ]
            if not runs:
                raise InputError(f"{source}: the MLflow store holds no runs")
            for run in runs:
                rows: dict[int, dict[str, float]] = {}
                for key in run.data.metrics:
                    for point in sorted(
                        client.get_metric_history(run.info.run_id, key), key=lambda m: m.timestamp
                    ):
                        rows.setdefault(point.step, {})[key] = point.value
                history = pd.DataFrame([{"step": step, **values} for step, values in sorted(rows.items())])
                if history.empty:
                    history = pd.DataFrame({"step": pd.Series(dtype=int)})
                name = run.info.run_name or run.info.run_id
                logs.append(RunLog(name, history, dict(run.data.params), f"{source} (run {run.info.run_id})"))
    return logs
