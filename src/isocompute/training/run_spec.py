"""One grid point's run as the training takes it: the model it starts from, what it computes, where it
lives and how it is laid out (`RunSpec`), and the layout of one process holding the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from isocompute.study.grid import GridPoint
from isocompute.study.specs import LaunchSpec, Recipe, TrainingSpec

# One process holding the whole batch: the layout of `train_run` and of the CPU default.
SINGLE_PROCESS = LaunchSpec(
    processes=1,
    per_device_batch_max=1 << 30,
    activation_checkpointing=False,
    accelerate_config=None,
)


@dataclass(frozen=True)
class RunSpec:
    """One grid point's run: the model it starts from, what it computes, where it lives, how it is laid out."""

    model_path: str
    point: GridPoint
    spec: TrainingSpec
    recipe: Recipe
    run_dir: str
    checker: str = "exact"
    launch: LaunchSpec = SINGLE_PROCESS
    # Where a rung of an adaptive sweep stops the run (a checkpoint step; None: the run's end). Not part of
    # what the run computes: the next rung goes on from this checkpoint as an uninterrupted run would.
    until_step: int | None = None
