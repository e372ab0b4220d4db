"""What a run does between TRL's steps: save at the study's compute points and on a wall-clock interval
(thinning older checkpoints), put the problems' order back on resume, and log each step to the run's
progress file.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from isocompute.training.checkpoints import keep_newest_whole
from isocompute.training.progress import append_event
from isocompute.training.timelimit import any_rank

class SaveAtComputePoints(TrainerCallback):
    """Save exactly at the steps that realize the study's log-spaced compute points and, once
    `resume_every_minutes` of wall-clock time have passed since the last save, a resume checkpoint.

    Compute-point checkpoints are what evaluation reads; resume checkpoints only bound the work a
    preempted job or a lost node loses. Once a save is whole, the older compute points keep only their
    weights and older resume checkpoints go (`checkpoints.keep_newest_whole`): one checkpoint of the run
    holds optimizer state. An interval in minutes rather than steps keeps the loss bounded in time whatever
    a step costs (seconds at small B, many minutes at B = 65,536). `resume_every_steps` is the deprecated
    step-count interval, still honoured where a config sets it.
    """

    def __init__(
        self,
        steps: list[int],
        resume_every_minutes: float | None = None,
        resume_every_steps: int | None = None,
    ) -> None:
        self.steps = set(steps)
        self.resume_every_seconds = None if resume_every_minutes is None else 60 * resume_every_minutes
        self.resume_every_steps = resume_every_steps
        self.last_save = time.monotonic()

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        self.last_save = time.monotonic()

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> TrainerControl:
        step = state.global_step
        due = bool(self.resume_every_steps and step % self.resume_every_steps == 0)
        if self.resume_every_seconds is not None:
            # Each rank reads its own clock; they vote, so that all of them save the same step.
            due = any_rank(due or time.monotonic() - self.last_save >= self.resume_every_seconds, args)
        if step in self.steps or due:
            control.should_save = True
        return control

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        self.last_save = time.monotonic()
        # Every rank writes its own part of a checkpoint (its RNG state, its ZeRO shards): rank 0 judges
        # the new checkpoint whole only once all of them are done.
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.barrier()
        if state.is_world_process_zero:
            keep_newest_whole(args.output_dir, self.steps)


class ReplayShuffles(TrainerCallback):
    """Puts the order of the training problems where an uninterrupted run would have it, on resume.

    TRL's `RepeatSampler` shuffles the problems once per epoch from a generator of its own, seeded when
    the trainer is built and not saved in checkpoints; transformers fast-forwards only the batches of the
    current epoch. A run resumed after its first epoch would therefore see the problems in another order
    than the uninterrupted run (measured: the training tables part 1 step after resuming at step 203 of a
    60-problem set, 15 steps per epoch). Drawing the earlier epochs' permutations again restores it.
    """

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        epochs = int(state.epoch or 0) if state.global_step else 0
        sampler = _shuffling_sampler(kwargs.get("train_dataloader"))
        if sampler is None or not epochs:
            return
        for _ in range(epochs):  # RepeatSampler.__iter__ draws one permutation per epoch
            torch.randperm(sampler.num_samples, generator=sampler.generator)


def _shuffling_sampler(loader: object) -> Any:
    """The sampler with its own shuffling generator behind a (possibly accelerate-wrapped) data loader."""
    todo, seen = [loader], set()
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        shuffles = isinstance(getattr(current, "generator", None), torch.Generator)
        if shuffles and hasattr(current, "num_samples"):
            return current
        todo += [getattr(current, name, None) for name in ("batch_sampler", "sampler")]
    return None


class ProgressLog(TrainerCallback):
    """Appends a `step` event to the run's progress file for every logged optimizer step (rank 0 only)."""

    def __init__(self, run_dir: str | Path, batch: int) -> None:
        self.run_dir = run_dir
        self.batch = batch

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **_: object,
    ) -> None:
        if not state.is_world_process_zero or not logs or "reward" not in logs:
            return
        append_event(
            self.run_dir,
            "step",
            step=state.global_step,
            max_steps=state.max_steps,
            reward=logs["reward"],
            compute_rollouts=state.global_step * self.batch,
            # the step's mean completion length: what `isocompute plan --pilot` fits step times against
            completion_tokens=logs.get("completions/mean_length"),
        )
