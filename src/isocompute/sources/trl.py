"""TRL output folders: each run's `trainer_state.json` log history, and its arguments where something
readable holds them.

TRL saves `trainer_state.json` (the trainer's `log_history`: one dict per logged step, evaluations prefixed
`eval_`) in each `checkpoint-<step>/` and, after `save_state()`, in the output folder itself: the one of the
highest `global_step` holds the others' history. TRL 1.16 writes its arguments only as `training_args.bin`,
a pickle, which cannot be read without running code from the file, so it is never opened. What is read
instead: this project's `run_settings.json` (the grid point), and transformers' `args` text summary in
event files under the folder (`report_to="tensorboard"`). A run with neither takes n and b_problem from a
run map or its name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from isocompute.fits.table_fit import InputError
from isocompute.sources.runs import RunLog, flat

STATE = "trainer_state.json"
PROJECT_SETTINGS = "run_settings.json"  # training.resume.RUN_SETTINGS, which imports torch's trainer


def run_folders(path: Path) -> list[Path]:
    """The output folders a source names: folders holding `trainer_state.json` directly or in a checkpoint."""
    if path.is_file():
        path = path.parent
    states = path.rglob(STATE)
    return sorted(
        {
            state.parent.parent if state.parent.name.startswith("checkpoint-") else state.parent
            for state in states
        }
    )


def _state(folder: Path) -> dict[str, Any]:
    """The trainer state of the highest global step in the folder and its checkpoints."""
    states = []
    for path in [folder / STATE, *folder.glob(f"checkpoint-*/{STATE}")]:
        if path.is_file():
            try:
                states.append(json.loads(path.read_text()))
            except ValueError as error:
                raise InputError(f"{path}: not readable JSON ({error})") from None
    return max(states, key=lambda state: state.get("global_step", 0))


def _config(folder: Path) -> dict[str, Any]:
    """The run's arguments from what TRL and this project write readably (see the module's docstring)."""
    config: dict[str, Any] = {}
    settings = folder / PROJECT_SETTINGS
    if settings.is_file():
        config.update(flat(json.loads(settings.read_text())))
    if next(folder.rglob("events.out.tfevents.*"), None) is not None:
        from isocompute.sources.tensorboard import read_event_folders

        for log in read_event_folders([folder]):
            config = {**log.config, **config}
    return config


def read_output_folders(paths: list[Path]) -> list[RunLog]:
    """One run per TRL output folder under each source, named by its path under the source."""
    logs = []
    for path in paths:
        folders = run_folders(path)
        if not folders:
            raise InputError(f"{path}: no TRL output folder ({STATE} in it or in a checkpoint-*/) under it")
        for folder in folders:
            history = pd.DataFrame([entry for entry in _state(folder)["log_history"] if "step" in entry])
            if history.empty:
                raise InputError(f"{folder}: {STATE} has an empty log_history")
            root = path if path.is_dir() else path.parent
            inside = folder != root and folder.is_relative_to(
                root
            )  # a checkpoint named alone: its run's folder
            name = folder.relative_to(root).as_posix() if inside else folder.name
            logs.append(RunLog(name, history, _config(folder), str(folder)))
    return logs
