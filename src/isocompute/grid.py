"""The sweep's grid and the recipe rules that follow from a grid point.

One definition each of: a grid point and its run name, the learning-rate rule, the number of optimizer
steps a compute budget buys, and the compute points where a run saves a checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RUN_PATTERN = "bp{b_problem}_n{n}_seed{seed}"


class GridError(ValueError):
    """A grid that cannot be run; the message names the config key."""


@dataclass(frozen=True, order=True)
class GridPoint:
    """One training run: a problem set, B_problem problems per step, n rollouts per problem, a seed."""

    problem_set: str
    b_problem: int
    n: int
    seed: int

    @property
    def batch(self) -> int:
        """B = B_problem * n, rollouts per optimizer step."""
        return self.b_problem * self.n

    @property
    def run(self) -> str:
        """The run's name in paths and tables."""
        return RUN_PATTERN.format(b_problem=self.b_problem, n=self.n, seed=self.seed)


def expand_grid(blocks: Sequence[Mapping[str, Any]], max_batch: Mapping[str, int]) -> list[GridPoint]:
    """Union of the blocks' products, deduplicated, so a point shared by two studies trains once.

    Each block names `problem_sets`, `n`, `seeds` and either `b_problem` (a list) or `batch` (fixed
    B = b_problem * n, so b_problem = batch / n). A point whose B_problem * n exceeds its problem set's
    `max_batch` is an error rather than silently dropped, unless the block says `drop_over_max_batch`
    (the paper's sweep: every pair of the two ranges with B_problem * n <= max_batch).
    """
    points: set[GridPoint] = set()
    for index, block in enumerate(blocks):
        pairs = _block_pairs(block, index)
        for problem_set in block["problem_sets"]:
            if problem_set not in max_batch:
                raise GridError(
                    f"grid[{index}].problem_sets names {problem_set!r}, not a key of problem_sets"
                )
            for b_problem, n in pairs:
                if b_problem * n > max_batch[problem_set]:
                    if block.get("drop_over_max_batch", False):
                        continue
                    raise GridError(
                        f"grid[{index}]: b_problem={b_problem} * n={n} = {b_problem * n} exceeds "
                        f"problem_sets.{problem_set}.max_batch={max_batch[problem_set]}"
                    )
                points.update(GridPoint(problem_set, b_problem, n, int(seed)) for seed in block["seeds"])
    return sorted(points)


def _block_pairs(block: Mapping[str, Any], index: int) -> list[tuple[int, int]]:
    """The (b_problem, n) pairs of one grid block."""
    if ("b_problem" in block) == ("batch" in block):
        raise GridError(f"grid[{index}] needs exactly one of b_problem or batch")
    if "b_problem" in block:
        return [(int(b), int(n)) for b in block["b_problem"] for n in block["n"]]
    pairs = []
    for batch in block["batch"]:
        for n in block["n"]:
            if batch % n:
                raise GridError(f"grid[{index}]: batch={batch} is not divisible by n={n}")
            pairs.append((batch // n, int(n)))
    return pairs


@dataclass(frozen=True)
class BatchSplit:
    """How one optimizer step's B rollouts are laid out: per device per micro-step, times accumulation."""

    per_device: int
    accumulation: int


def batch_split(batch: int, processes: int, per_device_max: int) -> BatchSplit:
    """The fewest gradient-accumulation steps that keep each device's micro-batch within per_device_max.

    One optimizer step must see exactly B = B_problem * n rollouts whatever the device count, so
    `processes * accumulation * per_device == B` holds exactly; `processes` must divide B.
    """
    if batch % processes:
        raise GridError(f"B = b_problem * n = {batch} is not divisible by training.processes = {processes}")
    per_process = batch // processes
    accumulation = next(
        g for g in range(1, per_process + 1) if per_process % g == 0 and per_process // g <= per_device_max
    )
    return BatchSplit(per_process // accumulation, accumulation)


def learning_rate(batch: int, lr_base: float, batch_ref: int) -> float:
    """Square-root scaling: eta = lr_base * sqrt(B / B_ref) (linear scaling was unstable in the study)."""
    return lr_base * math.sqrt(batch / batch_ref)


def total_steps(batch: int, compute_max: int) -> int:
    """M, the optimizer steps that take a run's compute (B per step) to at least compute_max rollouts."""
    return math.ceil(compute_max / batch)


def checkpoint_steps(batch: int, compute_min: int, compute_max: int, points: int) -> list[int]:
    """Steps at which to save, at compute points spaced evenly in log C from compute_min to compute_max.

    Every run shares the same compute grid, so curves of different n are sampled at comparable C; points
    below one step's compute collapse to step 1, and the last step is always saved.
    """
    if not 0 < compute_min <= compute_max:
        raise GridError(f"need 0 < compute_min ({compute_min}) <= compute_max ({compute_max})")
    last = total_steps(batch, compute_max)
    targets = np.geomspace(compute_min, compute_max, points)
    steps = {min(last, max(1, round(target / batch))) for target in targets}
    steps.add(last)
    return sorted(steps)
