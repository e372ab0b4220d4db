"""TensorBoard event files (TRL's and transformers' `report_to="tensorboard"`, verl's tensorboard logger,
this project's `training.report_to`), read with the tensorboard package's own `EventAccumulator`.

A run is a folder of event files (a resumed run adds a file to its folder; every file is read, the last
value of a step wins). Its scalars keep their tags (`train/reward`, `eval/...`, verl's `val-core/...`).
transformers writes the run's arguments as the text summary `args` (JSON, TRL's `num_generations` and
batch sizes among them) and this project adds the grid point as `isocompute`: both become the run's config,
and `run_name` from the arguments its name; a folder without them is named by its path under the source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from isocompute.fits.table_fit import InputError
from isocompute.sources.runs import RunLog, flat

EVENTS = "events.out.tfevents.*"
# Text summaries that hold a run's config as JSON: transformers' arguments and this project's grid point.
CONFIG_TEXTS = ("args/text_summary", "isocompute/text_summary")


def event_folders(path: Path) -> list[Path]:
    """The folders of event files a source names: its own folder when it is an event file, else every
    folder under it holding one."""
    if path.is_file():
        return [path.parent]
    return sorted({found.parent for found in path.rglob(EVENTS)})


def _config(events: Any) -> dict[str, Any]:
    """The JSON text summaries of `CONFIG_TEXTS`, flattened, the first value of each."""
    config: dict[str, Any] = {}
    for tag in CONFIG_TEXTS:
        if tag in events.Tags().get("tensors", []):
            text = events.Tensors(tag)[0].tensor_proto.string_val[0].decode()
            try:
                config.update(flat(json.loads(text)))
            except ValueError:
                continue  # a text summary that is not JSON is a note, not a config
    return config


def _scalars(events: Any) -> pd.DataFrame:
    """Every scalar of the run, one column per tag, one row per step (in file order: the last value wins)."""
    rows: dict[int, dict[str, float]] = {}
    for tag in events.Tags().get("scalars", []):
        for event in events.Scalars(tag):
            rows.setdefault(event.step, {})[tag] = event.value
    return pd.DataFrame([{"step": step, **values} for step, values in sorted(rows.items())])


def read_event_folders(paths: list[Path]) -> list[RunLog]:
    """One run per folder of event files under each source."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logs = []
    for path in paths:
        folders = event_folders(path)
        if not folders:
            raise InputError(f"{path}: no TensorBoard event files ({EVENTS}) under it")
        for folder in folders:
            events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
            events.Reload()
            history = _scalars(events)
            if history.empty:
                raise InputError(f"{folder}: the event files hold no scalars")
            config = _config(events)
            where = folder.relative_to(path).as_posix() if folder != path and path.is_dir() else folder.name
            logs.append(RunLog(str(config.get("run_name", where)), history, config, str(folder)))
    return logs
