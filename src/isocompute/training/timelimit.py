"""Stopping a training job cleanly before its SLURM time limit, so the resubmitted job loses nothing.

SLURM ends a job at its time limit with SIGTERM and, `KillWait` seconds later, SIGKILL; a run that
is mid-step then loses everything since its last checkpoint. The job therefore asks SLURM once, at its
start, when it ends (`squeue -h -j $SLURM_JOB_ID -o %L`, the time left): a warning signal is no
alternative here, since `sbatch --signal=B:...` reaches only the batch shell and the training runs in
a nested `snakemake` under `srun`. After every optimizer step the trainer compares the time left with
the longest recent step plus the longest save plus a margin; when it no longer fits, it saves a resume
checkpoint and stops, and the job exits non-zero, so that Snakemake's `retries` resubmit it and the new
job resumes from that checkpoint. Across several processes the ranks take the decision together (the
most cautious rank wins), so all of them save the same step.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from collections import deque

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from isocompute.errors import IsoComputeError

LOG = logging.getLogger(__name__)
_DURATION = re.compile(r"^(?:(?:(?P<days>\d+)-)?(?:(?P<hours>\d+):))?(?P<minutes>\d+):(?P<seconds>\d+)$")


class TimeLimitReached(IsoComputeError, RuntimeError):
    """The job saved a resume checkpoint and stopped before its time limit; a resubmission resumes it."""

    @classmethod
    def saved(cls, run_dir: object, step: int, max_steps: int) -> TimeLimitReached:
        return cls(
            f"{run_dir}: saved checkpoint-{step} (step {step} of {max_steps}) before the job's time limit; "
            "the resubmitted job resumes from it"
        )


def parse_time_left(text: str) -> float | None:
    """squeue's `%L` (`[days-][hours:]minutes:seconds`) in seconds; None for UNLIMITED, NOT_SET, INVALID."""
    match = _DURATION.match(text.strip())
    if not match:
        return None
    parts = {key: int(value or 0) for key, value in match.groupdict().items()}
    return float(((parts["days"] * 24 + parts["hours"]) * 60 + parts["minutes"]) * 60 + parts["seconds"])


def slurm_deadline() -> float | None:
    """When this SLURM job's time limit ends (seconds since the epoch), or None outside SLURM or unlimited."""
    job_id = os.environ.get("SLURM_JOB_ID")
    squeue = shutil.which("squeue")
    if not job_id or squeue is None:
        return None
    try:
        answer = subprocess.run(
            [squeue, "-h", "-j", job_id, "-o", "%L"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        LOG.warning(
            "could not read the time left of SLURM job %s (%s): no stop before its limit", job_id, error
        )
        return None
    left = parse_time_left(answer)
    if left is None:
        LOG.info("SLURM job %s has no time limit (%s)", job_id, answer.strip())
        return None
    LOG.info("SLURM job %s: %.0f s left; a resume checkpoint is saved before the limit", job_id, left)
    return time.time() + left


class StopBeforeTimeLimit(TrainerCallback):
    """Save and stop after the step past which one more step and one save would not fit before `deadline`.

    `margin` seconds are kept free beyond that for the process to exit and for the first save, whose
    duration is not known until it has happened.
    """

    def __init__(self, deadline: float | None, margin: float, recent_steps: int = 20) -> None:
        self.deadline = deadline
        self.margin = margin
        self.step_seconds: deque[float] = deque(maxlen=recent_steps)
        self.save_seconds = 0.0
        self.mark = time.monotonic()
        self.stopped_at: int | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        self.mark = time.monotonic()

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> TrainerControl:
        now = time.monotonic()
        self.step_seconds.append(now - self.mark)
        self.mark = now
        if self.deadline is None or state.global_step >= state.max_steps:
            return control
        needed = max(self.step_seconds) + self.save_seconds + self.margin
        left = self.deadline - time.time()
        if any_rank(left < needed, args):
            self.stopped_at = state.global_step
            control.should_save = True
            control.should_training_stop = True
            if state.is_world_process_zero:
                LOG.info(
                    "time limit: %.0f s left, less than one step (%.1f s) + one save (%.1f s) + margin (%.0f s): "
                    "saving checkpoint-%d (step %d of %d) and stopping, to be resubmitted",
                    left,
                    max(self.step_seconds),
                    self.save_seconds,
                    self.margin,
                    state.global_step,
                    state.global_step,
                    state.max_steps,
                )
        return control

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        now = time.monotonic()
        self.save_seconds = max(self.save_seconds, now - self.mark)
        self.mark = now


def any_rank(flag: bool, args: TrainingArguments) -> bool:
    """True on every rank when it is true on any: the ranks must save (and stop) at the same step, and
    each decides by its own clock."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return flag
    vote = torch.tensor([int(flag)], device=args.device)
    torch.distributed.all_reduce(vote, op=torch.distributed.ReduceOp.MAX)
    return bool(vote.item())
