"""Experiment tracking (`training.report_to`): one tracked run per grid point, continued by every attempt.

The trackers are transformers' own integrations (`report_to` is TRL's key: `tensorboard`, `wandb`,
`trackio`, ...). What the study adds: the tracked run is named `<problem set>/<run>`, carries the grid
point and the recipe in its config, and keeps one identity across the jobs that train it, so a job
resubmitted after its time limit continues the same curve instead of starting a new run: TensorBoard
writes to the fixed folder `<run>/tensorboard/` (offline files beside the checkpoints), W&B gets a run id
derived from the run folder and its settings with `resume=allow`, Trackio resumes by the run's name.
Changed settings restart a run afresh, and so get a new id. None of this changes what a run computes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

TENSORBOARD_DIR = "tensorboard"


def tracked_run_name(problem_set: str, run: str) -> str:
    """The tracked run's name: run names repeat across problem sets, so the set comes first."""
    return f"{problem_set}/{run}"


def tracked_run_id(run_dir: str | Path, settings: dict[str, object]) -> str:
    """A stable id for one run folder trained with one set of settings (W&B's run id)."""
    key = json.dumps({"run_dir": str(Path(run_dir).resolve()), "settings": settings}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@contextmanager
def tracking_environment(integrations: Sequence[str], run_dir: str | Path, run_id: str) -> Iterator[None]:
    """The environment variables by which transformers' trackers continue one run, set while it trains."""
    wanted = {}
    if "tensorboard" in integrations or "all" in integrations:
        wanted["TENSORBOARD_LOGGING_DIR"] = str(Path(run_dir) / TENSORBOARD_DIR)
    if "wandb" in integrations or "all" in integrations:
        wanted.update(WANDB_RUN_ID=run_id, WANDB_RESUME="allow")
    saved = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class TrackedRunConfig(TrainerCallback):
    """Adds the grid point and recipe to each tracker's run config once the trackers have started.

    Trainer callbacks run in order and the trackers come first, so at `on_train_begin` their runs exist:
    TensorBoard gets the config as a text summary, W&B and Trackio as config entries.
    """

    def __init__(self, config: dict[str, Any], callbacks: Sequence[TrainerCallback]) -> None:
        self.config = config
        self.callbacks = callbacks

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        if not state.is_world_process_zero:
            return
        for callback in self.callbacks:
            writer = getattr(callback, "tb_writer", None)
            if writer is not None:
                writer.add_text("isocompute", json.dumps(self.config, indent=2, sort_keys=True))
            for attribute in ("_wandb", "_trackio"):
                tracker = getattr(callback, attribute, None)
                if tracker is not None and getattr(tracker, "config", None) is not None:
                    tracker.config.update(self.config, allow_val_change=True)
