"""A run's live progress: `progress.jsonl` in its run folder, one JSON event per line, appended as it goes.

The declared training table is written once, at the end; a weeks-long study is watched through this
file instead. It is not a declared output, so no rerun deletes what a user is watching, and it survives
every attempt of a run: the job appends a `start` event (host, SLURM job, GPUs, the checkpoint it resumes
from) and an `end` event with its outcome, the trainer (`training.ProgressLog`) a `step` event per logged
optimizer step and a `time_limit` event when it stopped before its job's time limit. `isocompute status`
reads it from the shared file system alone. Each event is one `write` of one line; a reader skips a line
cut off by a kill. This module imports no torch, so that `isocompute status` starts fast.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROGRESS_FILE = "progress.jsonl"


def append_event(run_dir: str | Path, event: str, **fields: Any) -> None:
    """Append one event, stamped with the time (seconds since the epoch)."""
    line = json.dumps({"event": event, "time": time.time(), **fields}) + "\n"
    with open(Path(run_dir) / PROGRESS_FILE, "a") as handle:
        handle.write(line)


def read_events(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every whole event of the run's progress file (none when there is no file)."""
    return read_event_file(Path(run_dir) / PROGRESS_FILE)


def read_event_file(path: Path) -> list[dict[str, Any]]:
    """Every whole event of a progress file wherever it lies (a pilot's copy, say); none when it is absent."""
    if not path.is_file():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a line cut off by a kill
    return events


@dataclass
class Attempt:
    """One job's try at a run: its `start` event, its logged steps, and how it ended (None: no end event)."""

    start: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    time_limit: dict[str, Any] | None = None
    outcome: str | None = None
    end_time: float | None = None

    @property
    def last_time(self) -> float:
        """The last moment the attempt is known to have been alive."""
        times = [self.start["time"], *(s["time"] for s in self.steps)]
        return self.end_time if self.end_time is not None else max(times)

    def seconds_per_step(self) -> float | None:
        """The attempt's pace so far, from its first logged step to its last (None before two steps)."""
        if len(self.steps) < 2:
            return None
        first, last = self.steps[0], self.steps[-1]
        return (last["time"] - first["time"]) / max(last["step"] - first["step"], 1)


def attempts(events: list[dict[str, Any]]) -> list[Attempt]:
    """The events grouped by the attempt (job) that wrote them, oldest first."""
    found: list[Attempt] = []
    for event in events:
        kind = event.get("event")
        if kind == "start":
            found.append(Attempt(event))
        elif not found:
            continue
        elif kind == "step":
            found[-1].steps.append(event)
        elif kind == "time_limit":
            found[-1].time_limit = event
        elif kind == "end":
            found[-1].outcome = event.get("outcome")
            found[-1].end_time = event["time"]
    return found


def start_attempt(
    run_dir: str | Path, gpus: int, resume: str | None, max_steps: int, batch: int, slurm_job_id: str | None
) -> None:
    """The `start` event of a job's attempt at the run."""
    resume_step = int(Path(resume).name.rsplit("-", 1)[1]) if resume else 0
    append_event(
        run_dir,
        "start",
        host=socket.gethostname(),
        slurm_job_id=slurm_job_id,
        gpus=gpus,
        resume_from=Path(resume).name if resume else None,
        resume_step=resume_step,
        max_steps=max_steps,
        batch=batch,
    )
