"""The grid and the recipe rules that follow from a grid point.

One definition each of: a grid point and its run name, the learning-rate rule, the number of optimizer
steps a compute budget buys, and the compute points where a run saves a checkpoint.

A grid point is keyed by everything that changes what its run computes: the problem set, B_problem, n and
the seed, and, where they differ from the set's defaults, the recipe, the learning-rate settings and the
decoupled baseline's n_baseline. A default point keeps the plain name `bp<B_problem>_n<n>_seed<seed>`, so
the default study's paths never change; any other point says what differs in readable suffixes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np

from isocompute.errors import IsoComputeError

RUN_PATTERN = "bp{b_problem}_n{n}_seed{seed}"

# lr = lr_base * f(B / B_ref): the three rules of the paper's Figure 4 (square root is the study's choice).
LR_RULES: dict[str, Callable[[float], float]] = {
    "constant": lambda ratio: 1.0,
    "linear": lambda ratio: ratio,
    "sqrt": math.sqrt,
}


class GridError(IsoComputeError, ValueError):
    """A grid that cannot be run; the message names the config key."""


def learning_rate(batch: int, lr_base: float, batch_ref: int, rule: str) -> float:
    """lr = lr_base * f(B / B_ref) with f of `rule` (constant, linear or sqrt); B counts the rollouts in the loss.

    The paper anchors lr_base = 1e-6 at B_ref = 1,024 and scales with the square root: linear scaling was
    unstable at large B, a constant rate slow.
    """
    if rule not in LR_RULES:
        raise GridError(f"unknown learning-rate rule {rule!r}; known: {sorted(LR_RULES)}")
    return lr_base * LR_RULES[rule](batch / batch_ref)


@dataclass(frozen=True)
class LearningRate:
    """A run's learning-rate settings: the rule, its anchor lr_base and the reference batch B_ref."""

    rule: str
    base: float
    batch_ref: int

    def at(self, batch: int) -> float:
        return learning_rate(batch, self.base, self.batch_ref, self.rule)

    @property
    def label(self) -> str:
        """`<rule>-<base>-ref<B_ref>`, e.g. `linear-1e-4-ref128`: part of a run's name."""
        mantissa, exponent = f"{self.base:.6e}".split("e")
        return f"{self.rule}-{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}-ref{self.batch_ref}"


@dataclass(frozen=True)
class GridPoint:
    """One training run: a problem set, B_problem problems per step, n rollouts per problem in the loss, a
    seed; and, where they differ from the set's defaults, the recipe, the learning rate and n_baseline.

    `recipe` and the three `lr_*` fields are None for the problem set's own recipe and `training.lr_*`.
    `n_baseline` (decoupled baseline, paper Fig. 22) samples that many rollouts per problem and takes the
    group's mean and standard deviation over all of them, while only a random `n` of each group enter the
    loss; compute and steps count the sampled rollouts, the learning rate the ones in the loss.
    """

    problem_set: str
    b_problem: int
    n: int
    seed: int
    recipe: str | None = None
    lr_rule: str | None = None
    lr_base: float | None = None
    lr_batch_ref: int | None = None
    n_baseline: int | None = None

    def _key(self) -> tuple[Any, ...]:
        return (self.problem_set, self.b_problem, self.n, self.seed, self.n_baseline or 0, self.recipe or "",
                self.lr_rule or "", self.lr_base or 0.0, self.lr_batch_ref or 0)  # fmt: skip

    def __lt__(self, other: GridPoint) -> bool:
        return self._key() < other._key()

    @property
    def lr(self) -> LearningRate | None:
        """The run's own learning-rate settings; None for the study's default (`training.lr_*`)."""
        if self.lr_rule is None:
            return None
        return LearningRate(self.lr_rule, float(self.lr_base), int(self.lr_batch_ref))

    @property
    def n_sampled(self) -> int:
        """Rollouts sampled per problem: n_baseline for a decoupled baseline, else n (TRL's num_generations)."""
        return self.n_baseline or self.n

    @property
    def batch(self) -> int:
        """B = B_problem * rollouts sampled per problem: what one optimizer step costs in compute."""
        return self.b_problem * self.n_sampled

    @property
    def update_batch(self) -> int:
        """B_problem * n, the rollouts in the loss of one step: what the learning-rate rule scales with."""
        return self.b_problem * self.n

    @property
    def is_default(self) -> bool:
        """The set's own recipe and learning rate, no decoupled baseline: a run of the scaling study."""
        return self.recipe is None and self.lr_rule is None and self.n_baseline is None

    @property
    def run(self) -> str:
        """The run's name in paths and tables: `bp16_n8_seed0`, plus `_baseline<n_baseline>`,
        `_recipe-<name>` and `_lr-<rule>-<base>-ref<B_ref>` where they are not the defaults.

        Recipe names hold no `-` (the config schema), so a name maps back to one point.
        """
        name = RUN_PATTERN.format(b_problem=self.b_problem, n=self.n, seed=self.seed)
        if self.n_baseline is not None:
            name += f"_baseline{self.n_baseline}"
        if self.recipe is not None:
            name += f"_recipe-{self.recipe}"
        if self.lr is not None:
            name += f"_lr-{self.lr.label}"
        return name


def expand_grid(
    blocks: Sequence[Mapping[str, Any]],
    max_batch: Mapping[str, int],
    set_recipes: Mapping[str, str] | None = None,
    default_lr: LearningRate | None = None,
    key: str = "grid",
) -> list[GridPoint]:
    """Union of the blocks' products, deduplicated, so a point shared by two studies trains once.

    Each block names `problem_sets`, `n`, `seeds` and either `b_problem` (a list) or `batch` (fixed
    B = b_problem * n, so b_problem = batch / n); optionally `recipes` (keys of `recipes`), `lr` (a list of
    learning-rate settings, each any of `rule`, `base`, `batch_ref`, the rest from `default_lr`) and
    `n_baseline`. A recipe that is the set's own (`set_recipes`) and settings equal to `default_lr` are the
    defaults, so naming them explicitly gives the default point. A point whose sampled batch exceeds its
    problem set's `max_batch` is an error rather than silently dropped, unless the block says
    `drop_over_max_batch` (the paper's grid: every pair of the two ranges with B_problem * n <= max_batch).
    `key` is the config key the blocks come from, for error messages.
    """
    set_recipes = set_recipes or {}
    points: set[GridPoint] = set()
    for index, block in enumerate(blocks):
        where = f"{key}[{index}]"
        pairs = _block_pairs(block, where)
        lrs = _block_lrs(block, default_lr, where)
        for problem_set in block["problem_sets"]:
            if problem_set not in max_batch:
                raise GridError(f"{where}.problem_sets names {problem_set!r}, not a key of problem_sets")
            recipes = [None if r == set_recipes.get(problem_set) else r for r in block.get("recipes", [None])]
            for (b_problem, n), n_baseline, recipe, lr in product(pairs, block.get("n_baseline", [None]), recipes, lrs):
                if n_baseline is not None and n_baseline <= n:
                    raise GridError(f"{where}: n_baseline={n_baseline} must exceed n={n} (n of them enter the loss)")
                sampled = b_problem * (n_baseline or n)
                if sampled > max_batch[problem_set]:
                    if block.get("drop_over_max_batch", False):
                        continue
                    raise GridError(
                        f"{where}: b_problem={b_problem} * {'n_baseline' if n_baseline else 'n'}={n_baseline or n} "
                        f"= {sampled} exceeds problem_sets.{problem_set}.max_batch={max_batch[problem_set]}"
                    )
                lr_fields = (lr.rule, lr.base, lr.batch_ref) if lr is not None else (None, None, None)
                points.update(
                    GridPoint(problem_set, b_problem, n, int(seed), recipe, *lr_fields, n_baseline)
                    for seed in block["seeds"]
                )
    return sorted(points)


def _block_lrs(block: Mapping[str, Any], default: LearningRate | None, where: str) -> list[LearningRate | None]:
    """A block's learning-rate settings, completed from the default; the default itself is None."""
    if "lr" not in block:
        return [None]
    if default is None:
        raise GridError(f"{where}.lr needs the default learning rate (training.lr_rule, lr_base, lr_batch_ref)")
    settings = []
    for entry in block["lr"]:
        lr = LearningRate(
            str(entry.get("rule", default.rule)),
            float(entry.get("base", default.base)),
            int(entry.get("batch_ref", default.batch_ref)),
        )
        if lr.rule not in LR_RULES:
            raise GridError(f"{where}.lr: unknown rule {lr.rule!r}; known: {sorted(LR_RULES)}")
        settings.append(None if lr == default else lr)
    return settings


def _block_pairs(block: Mapping[str, Any], where: str) -> list[tuple[int, int]]:
    """The (b_problem, n) pairs of one grid block."""
    if ("b_problem" in block) == ("batch" in block):
        raise GridError(f"{where} needs exactly one of b_problem or batch")
    if "b_problem" in block:
        return [(int(b), int(n)) for b in block["b_problem"] for n in block["n"]]
    pairs = []
    for batch in block["batch"]:
        for n in block["n"]:
            if batch % n:
                raise GridError(f"{where}: batch={batch} is not divisible by n={n}")
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
