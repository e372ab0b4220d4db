"""Evaluation tables with a known frontier, drawn the way the pipeline measures them, and how well the fits
recover it. `python tests/known_truth.py [SEEDS...] [--family=NAME ...] [--points]` prints the recovery
figures (with `--points`, every compute point of every fit);
tests/test_recovery.py asserts them.

Each scenario is a family of reward curves R_n(C) (the study's sigmoid) whose true optimum n*(C) is known.
Runs of B = B_problem * n rollouts per step save either at log-spaced compute targets rounded to whole
steps (`checkpoints` > 0: a shared compute grid, as `grid.checkpoint_steps` does, so a large n is first
measured at a larger compute) or at steps 1, 2, 4, ... (`checkpoints` = 0: a per-run power-of-two schedule,
so a large n has only ~10 points). Every checkpoint is scored as avg@4 of `problems` validation problems x 4
samples: problem i solves with probability expit(logit(R_n(C)) + z_i), z_i fixed per problem, so problems
differ in difficulty and the noise is binomial and correlated across checkpoints, as in a real evaluation.
With `seeds` > 1 each n is trained that many times, each seed's curve its own draw around the true one
(`SEED_SPREAD`).

Two kinds of scenario: the `SCENARIOS` of the first fits (curves far apart), and the `CLOSE` families of real
studies, adjacent curves as close as in the paper's Figure 5 (ceilings ~0.03-0.04 apart per doubling of n,
midpoints growing with n), with their negative cases (flat, constant, falling, not monotone) beside them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import optimum_curve, reward_curve
from isocompute.fits.study_fit import fit_study
from isocompute.sampling.metrics import summarize_counts
from isocompute.study.grid import checkpoint_steps

B_PROBLEM = 32
R0 = 0.1
PROBLEMS = 300
K = 4
# The paper's Easy law at B_problem = 32 (docs/reference/recipe.md): log2 n* = 6.09 / (1 + exp(-4.75 (log10 C - 5.84))) + 2.73.
PAPER_EASY = (6.09, 4.75, 5.84, 2.73)


# A seed's curve around the true one: its ceiling and log10 C_mid drawn with these standard deviations.
SEED_SPREAD = (0.01, 0.03)


@dataclass(frozen=True)
class Scenario:
    """Curves per n as (A, log10 C_mid, B) with R0 = `R0`, measured from `compute_min` to `compute_max`.

    With `batch`, a fixed-B study: B_problem = batch / n, and the curves, the compute range and the fit are in
    optimizer steps M (the fixed-B question's compute), keyed by (B_problem, n)."""

    name: str
    curves: dict[int, tuple[float, float, float]]
    compute_min: float
    compute_max: float
    checkpoints: int
    seeds: int = 1
    problems: int = PROBLEMS
    batch: int | None = None
    r0: float = R0
    b_problem_fixed: int = B_PROBLEM
    # Dense schedules: an evaluation every `dense[0]` steps up to step `dense[1]`, the same steps for every n,
    # so each n covers its own compute range (an exported training log).
    dense: tuple[int, int] | None = None

    @property
    def by(self) -> tuple[str, ...]:
        return ("b_problem", "n") if self.batch else ("n",)

    @property
    def compute(self) -> str:
        return "step" if self.batch else "compute_rollouts"

    def b_problem(self, n: int) -> int:
        return self.batch // n if self.batch else self.b_problem_fixed

    def steps(self, n: int) -> list[int]:
        """The checkpoint steps of n's runs."""
        if self.dense:
            return list(range(self.dense[0], self.dense[1] + 1, self.dense[0]))
        if self.batch:
            return [2**j for j in range(int(np.log2(self.compute_max)) + 1) if 2**j >= self.compute_min]
        batch = self.b_problem(n) * n
        if self.checkpoints:
            return checkpoint_steps(batch, int(self.compute_min), int(self.compute_max), self.checkpoints)
        last = int(self.compute_max // batch)
        return sorted({*(2**j for j in range(int(np.log2(last)) + 1)), last})

    def reward(self, n: int, compute: np.ndarray) -> np.ndarray:
        a, mid, slope = self.curves[n]
        return reward_curve(np.log10(compute), self.r0, a, mid, slope)

    def true_optimum(self, compute: np.ndarray) -> np.ndarray:
        """The n whose true curve is highest at each compute (over every n, as the truth knows no ranges)."""
        ns = sorted(self.curves)
        return np.array(ns)[np.argmax([self.reward(n, compute) for n in ns], axis=0)]


def staircase(winners: Sequence[int], crossings: Sequence[float], lead: float = 0.0, slope: float = 1.5,
              first: tuple[float, float] = (0.2, 2.7)) -> dict[int, tuple[float, float, float]]:  # fmt: skip
    """Curves where `winners[i + 1]` overtakes `winners[i]` exactly at log10 C = `crossings[i]`.

    Each new curve has its midpoint `lead` decades after its crossing and the ceiling that makes it meet
    the previous winner there; with one shape for all, two curves cross once, so the winners follow each
    other in this order.
    """
    curves = {winners[0]: (first[0], first[1], slope)}
    for previous, n, crossing in zip(winners, winners[1:], crossings):
        a, mid, _ = curves[previous]
        meet = reward_curve(crossing, R0, a, mid, slope)
        share = 1.0 / (1.0 + 10 ** (slope * lead))
        curves[n] = (R0 + (meet - R0) / share, crossing + lead, slope)
    return curves


def dominated(curves: dict[int, tuple[float, float, float]], copies: dict[int, int], drop: float = 0.08) -> dict[int, tuple[float, float, float]]:
    """Add curves that are copies of another with a ceiling `drop` lower: never optimal."""
    return {**curves, **{n: (curves[of][0] - drop, *curves[of][1:]) for n, of in copies.items()}}


def _paper_crossings() -> list[float]:
    """Where the discrete n* of the paper's law moves from 2^j to 2^(j+1) (log2 n* = j + 1/2), j = 3 .. 8."""
    L, k, c0, b = PAPER_EASY
    return [c0 - np.log(L / (j + 0.5 - b) - 1) / k for j in range(3, 9)]


def ladder(first: tuple[float, float], growth: float, spacing: float, slope: float, top: int,
           ns: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024), drop: float = 0.04) -> dict[int, tuple[float, float, float]]:  # fmt: skip
    """Curves where each larger n starts later (`spacing` decades) and gains `growth` times more, up to `top`;
    beyond `top` the gain falls by `drop` per doubling. n* climbs the ladder as compute grows, and every curve
    sits at the base value at the lowest compute of a grid that starts below the first midpoint."""
    gain, mid = first
    rungs = int(np.log2(top / ns[0]))
    return {n: (R0 + gain * (1 + growth) ** min(j, rungs) - drop * max(0, j - rungs), mid + spacing * j, slope)
            for j, n in enumerate(ns)}  # fmt: skip


# The real-shaped scenarios: every n in 8 .. 1024 at B_problem 32 on the paper preset's shared compute grid
# (2^14 .. 2^24 rollouts, 20 points), starting where every curve still sits at the base model's value.
SHARED_GRID = (2.0**14, 2.0**24, 20)
STEEP = 3.0

SCENARIOS = {
    # n* rises 8 -> 256 as the paper's law does; n = 512 stays below 256 (the law's ceiling is 2^8.8).
    "paper_easy_law": Scenario(
        "paper_easy_law",
        dominated(staircase([4, 8, 16, 32, 64, 128, 256], [3.0, *_paper_crossings()[:-1]]), {512: 256}, drop=0.05),
        1e3,
        1e7,
        25,
    ),
    "constant": Scenario("constant", dominated({8: (0.6, 4.2, 1.0)}, {4: 8, 16: 8, 32: 8}), 1e3, 1e6, 19),
    "two_levels": Scenario("two_levels", dominated(staircase([4, 16], [4.5]), {8: 16, 32: 16}), 1e3, 1e6, 19),
    "not_monotone": Scenario(
        "not_monotone", dominated(staircase([8, 32, 16, 64], [4.0, 4.6, 5.2]), {128: 64}), 1e3, 1e6, 19
    ),
    # n* 8 for the first decade (8 and 16 both at the base value at first), then 16, 32, 64, 128, 256.
    "shared_grid_law": Scenario("shared_grid_law", ladder((0.3, 4.7), 0.2, 0.4, STEEP, top=256), *SHARED_GRID),
    "shared_grid_constant": Scenario(
        "shared_grid_constant", dominated({8: (0.55, 4.7, STEEP)}, {n: 8 for n in (16, 32, 64, 128, 256, 512, 1024)}, 0.05),
        *SHARED_GRID,
    ),
    "shared_grid_two_levels": Scenario(
        "shared_grid_two_levels",
        dominated({8: (0.4, 4.7, STEEP), 32: (0.6, 5.5, STEEP)}, {16: 8, **{n: 32 for n in (64, 128, 256, 512, 1024)}}, 0.05),
        *SHARED_GRID,
    ),
    "shared_grid_not_monotone": Scenario(
        "shared_grid_not_monotone",
        dominated({8: (0.35, 4.7, STEEP), 64: (0.5, 5.2, STEEP), 16: (0.65, 5.8, STEEP), 128: (0.8, 6.4, STEEP)},
                  {32: 16, 256: 128, 512: 128, 1024: 128}, 0.05),  # fmt: skip
        *SHARED_GRID,
    ),
    "shared_grid_falling": Scenario(
        "shared_grid_falling",
        dominated({64: (0.4, 4.7, STEEP), 16: (0.6, 5.5, STEEP)}, {8: 16, 32: 16, **{n: 64 for n in (128, 256, 512, 1024)}}, 0.05),
        *SHARED_GRID,
    ),
}


def close_ladder(ns: Sequence[int], first: tuple[float, float], ceiling_step: float = 0.035, mid_step: float = 0.35,
                 slope: float = 1.0, top: int | None = None, drop: float = 0.03) -> dict[int, tuple[float, float, float]]:  # fmt: skip
    """Curves as close as in the paper's Figure 5: in the order of `ns`, each next curve's ceiling is
    `ceiling_step` higher and its midpoint `mid_step` decades later (midpoints roughly proportional to n), up
    to `top`; beyond it the ceiling falls by `drop` per step. Two neighbours cross on the upper part of the
    earlier one, so n* climbs `ns` one value at a time, a crossing every ~`mid_step` decades, and near each
    crossing the two are level: most points of the rise are ties."""
    rungs = list(ns).index(top) if top is not None else len(ns) - 1
    return {n: (first[0] + ceiling_step * min(j, rungs) - drop * max(0, j - rungs), first[1] + mid_step * j, slope)
            for j, n in enumerate(ns)}  # fmt: skip


PAPER_NS = (8, 16, 32, 64, 128, 256, 512, 1024)
# The close families, each drawn on three or more seeds, with per-problem counts and without. Positive: a
# truth that moves over two decades or more and saturates inside the range, or is still rising at C_max;
# on a shared compute grid and on per-run power-of-two schedules; one and two seeds per n; at fixed
# B_problem and at fixed B. Negative: one n best everywhere by a close margin, every n the same curve, a
# falling n*, and an n* that rises, falls back two doublings for half a decade and rises again.
CLOSE = {
    # n* 8 -> 256 between ~5e4 and ~2e6, then flat; the paper preset's shared grid.
    "close_shared_saturating": Scenario(
        "close_shared_saturating", close_ladder(PAPER_NS, (0.45, 3.6), top=256), *SHARED_GRID
    ),
    # n* 4 -> 512, still rising at C_max; per-run power-of-two checkpoints up to 2^24 rollouts.
    "close_power2_rising": Scenario(
        "close_power2_rising", close_ladder((4, 8, 16, 32, 64, 128, 256, 512), (0.40, 3.0), mid_step=0.4), 1.0, 2.0**24, 0
    ),
    # n* 2 -> 64 between ~1e4 and ~1e6, then flat; two seeds per n, 400 problems, power-of-two checkpoints.
    "close_two_seeds": Scenario(
        "close_two_seeds", close_ladder((2, 4, 8, 16, 32, 64, 128, 256), (0.40, 2.8), 0.03, 0.45, 1.2, top=64),
        1.0, 2.0**23, 0, seeds=2, problems=400,
    ),
    # n* 4 -> 128 on a shared grid from 2^12 with two seeds per n; still rising slowly at C_max.
    "close_shared_two_seeds": Scenario(
        "close_shared_two_seeds", close_ladder((4, 8, 16, 32, 64, 128, 256, 512), (0.42, 3.2), 0.03, 0.45),
        2.0**12, 2.0**24, 24, seeds=2,
    ),
    # Fixed B = 8,192: n*(M) 16 -> 256 between M ~ 30 and ~1,500 over six (B_problem, n) pairs, M in steps 1 .. 4,096.
    "close_fixed_batch": Scenario(
        "close_fixed_batch", close_ladder((16, 32, 64, 128, 256, 512), (0.45, 0.4), mid_step=0.45, top=256),
        1.0, 4096.0, 0, batch=8192,
    ),
    # Fixed B = 8,192 as a new user's study is shaped: curves rising from the first optimizer step (n = 16's
    # midpoint at 10 steps, midpoints proportional to n, ceilings 0.035 higher per doubling up to n = 256),
    # a base value of 0.33, checkpoints at powers of two of M: at M = 1-4 every curve is within 0.01 of the
    # base and of each other, and the true n*(M) rises 16 -> 256.
    "close_fixed_batch_early": Scenario(
        "close_fixed_batch_early", close_ladder((16, 32, 64, 128, 256, 512), (0.45, 1.0), mid_step=0.30, top=256),
        1.0, 4096.0, 0, batch=8192, r0=0.33,
    ),
    # The same question with steeper curves, n from 8 and a plateau at 128; 400 problems.
    "close_fixed_batch_early_steep": Scenario(
        "close_fixed_batch_early_steep",
        close_ladder((8, 16, 32, 64, 128, 256, 512), (0.42, 0.9), 0.03, 0.30, 1.4, top=128),
        1.0, 4096.0, 0, batch=8192, r0=0.30, problems=400,
    ),
    # Per-run power-of-two checkpoints, two seeds per n, a truth starting at n = 2 and rising to 32 (300 problems).
    "close_two_seeds_from_two": Scenario(
        "close_two_seeds_from_two", close_ladder((2, 4, 8, 16, 32, 64, 128), (0.38, 2.5), 0.03, 0.40, 1.0, top=32),
        1.0, 2.0**22, 0, seeds=2,
    ),
    # A dense log as a public GRPO group-size ablation is shaped: n in {4, 8, 16, 32}, 512 problems per step,
    # an evaluation every 2 steps for 96 steps, so each n covers its own compute range (n = 4 alone below
    # ~3e4 rollouts, n = 32 alone above ~2e5) and n* moves 4 -> 16 where they overlap; 32 never beats 16.
    "dense_equal_steps": Scenario(
        "dense_equal_steps", close_ladder((4, 8, 16, 32), (0.40, 4.2), 0.035, 0.30, 1.2, top=16),
        0.0, 0.0, 0, b_problem_fixed=512, dense=(2, 96), problems=500, r0=0.25,
    ),
    "close_constant": Scenario(
        "close_constant", dominated({32: (0.55, 4.6, 1.0)}, {n: 32 for n in PAPER_NS if n != 32}, drop=0.03), *SHARED_GRID
    ),
    "close_flat": Scenario("close_flat", {n: (0.55, 4.6, 1.0) for n in PAPER_NS}, *SHARED_GRID),
    # n* falls 1024 -> 16 between ~5e4 and ~4e6; a shared grid from 2^15, where every n has taken a step.
    "close_falling": Scenario(
        "close_falling", close_ladder(PAPER_NS[::-1], (0.45, 3.6), top=16), 2.0**15, 2.0**24, 20
    ),
    "close_fixed_batch_flat": Scenario(
        "close_fixed_batch_flat", {n: (0.50, 1.5, 1.0) for n in (16, 32, 64, 128, 256, 512)}, 1.0, 4096.0, 0,
        batch=8192, r0=0.33,
    ),
    "dense_flat": Scenario(
        "dense_flat", {n: (0.50, 4.8, 1.2) for n in (4, 8, 16, 32)}, 0.0, 0.0, 0, b_problem_fixed=512,
        dense=(2, 96), problems=500, r0=0.25,
    ),
    # n = 8 best wherever it was measured by 0.03; each n covers its own range.
    "dense_constant": Scenario(
        "dense_constant", dominated({8: (0.50, 4.6, 1.2)}, {4: 8, 16: 8, 32: 8}, drop=0.03), 0.0, 0.0, 0,
        b_problem_fixed=512, dense=(2, 96), problems=500, r0=0.25,
    ),
    "close_not_monotone": Scenario(
        "close_not_monotone",
        dominated(close_ladder((8, 64, 16, 128, 256), (0.45, 3.6), 0.05, 0.5), {32: 16, 512: 256, 1024: 256}, drop=0.03),
        *SHARED_GRID,
    ),
}
# Equal-step sweeps, as every public GRPO group-size sweep is run: n in {8, 16, 32, 64} at 64 problems a step,
# 4,000 steps each, evaluated every 25 steps on 500 problems, so n = 8 ends at 2e6 rollouts and n = 64 at 1.6e7.
EQUAL_STEPS = dict(b_problem_fixed=64, dense=(25, 4000), problems=500, r0=0.25)
EQUAL_NS = (8, 16, 32, 64)
CLOSE.update({
    # One ceiling for every n, its midpoint at step 400 of every run: at equal compute the smallest n is best
    # everywhere (n* = 8), and where n = 8 ended the others take over one by one without ever passing it.
    "equal_steps_constant": Scenario(
        "equal_steps_constant", {n: (0.60, 5.31 + np.log10(n / 8), 1.2) for n in EQUAL_NS}, 0.0, 0.0, 0, **EQUAL_STEPS
    ),
    # Each doubling of n 0.04 higher and its midpoint 0.15 decades later: n* rises 8 -> 64 between 1e5 and 6e5
    # rollouts, where every n is measured, and stays at 64.
    "equal_steps_rising": Scenario(
        "equal_steps_rising", close_ladder(EQUAL_NS, (0.45, 5.0), 0.04, 0.15, 1.2), 0.0, 0.0, 0, **EQUAL_STEPS
    ),
    # A dense log with every step evaluated: dense_equal_steps' truth (n* 4 -> 16) at one evaluation per step.
    "dense_every_step": Scenario(
        "dense_every_step", close_ladder((4, 8, 16, 32), (0.40, 4.2), 0.035, 0.30, 1.2, top=16),
        0.0, 0.0, 0, b_problem_fixed=512, dense=(1, 96), problems=500, r0=0.25,
    ),
})
# One truth (close_shared_saturating's) evaluated at 10, 20, 40 and 80 shared compute points: more evaluation
# must never make a law harder to find.
CLOSE.update({
    f"points_{points}": Scenario(f"points_{points}", close_ladder(PAPER_NS, (0.45, 3.6), top=256), *SHARED_GRID[:2], points)
    for points in (10, 20, 40, 80)
})
CLOSE_POSITIVE = [name for name in CLOSE if not name.endswith(("constant", "flat", "falling", "not_monotone"))]
# Truths with no law: one n best everywhere, every n the same curve, an n* that falls back.
NEGATIVE = [name for name in CLOSE if name.endswith(("constant", "flat", "not_monotone"))]


def drawn(
    scenario: Scenario, seed: int
) -> tuple[np.ndarray, dict[int, list[np.ndarray]], list[tuple[int, int, int, np.ndarray]], np.ndarray]:
    """The random numbers of one repetition, in the one order `draw` and the truth (`true_reward`) both read:
    the problems' difficulties; per n, each seed's (ceiling, log10 C_mid) offset from the true curve (zero with
    one seed); per (n, seed, step) the problems' correct counts; the base model's counts."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.0, scenario.problems)
    offsets: dict[int, list[np.ndarray]] = {}
    correct = []
    for n in sorted(scenario.curves):
        a, mid, slope = scenario.curves[n]
        for run_seed in range(scenario.seeds):
            offset = rng.normal(0.0, 1.0, 2) * SEED_SPREAD if scenario.seeds > 1 else np.zeros(2)
            offsets.setdefault(n, []).append(offset)
            for step in scenario.steps(n):
                x = np.log10(step if scenario.batch else float(step * scenario.b_problem(n) * n))
                reward = reward_curve(x, scenario.r0, a + offset[0], mid + offset[1], slope)
                correct.append((n, run_seed, step, rng.binomial(K, expit(logit(reward) + difficulty))))
    base = rng.binomial(K, expit(logit(scenario.r0) + difficulty))
    return difficulty, offsets, correct, base


def draw(scenario: Scenario, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The evaluation table, per-problem counts and the base model's counts of one repetition."""
    _, _, correct, base = drawn(scenario, seed)
    ids = [f"p{i:03d}" for i in range(scenario.problems)]
    rows, counts = [], []
    for n, run_seed, step, n_correct in correct:
        b_problem = scenario.b_problem(n)
        compute = float(step * b_problem * n)
        at = {"run": f"bp{b_problem}_n{n}_seed{run_seed}", "b_problem": b_problem, "n": n, "seed": run_seed,
              "step": step, "compute_rollouts": compute, "compute_tokens": 6 * compute}  # fmt: skip
        rows.append({**at, **summarize_counts(n_correct, K)})
        counts.append(pd.DataFrame({"id": ids, "n_correct": n_correct, **at}))
    return pd.DataFrame(rows), pd.concat(counts, ignore_index=True), pd.DataFrame({"id": ids, "n_correct": base})


def true_reward(scenario: Scenario, seed: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """Each n's expected avg@4 at given compute values on the validation problems of `draw(scenario, seed)`: the
    mean over its problems of their solve probabilities, the curve a fit of that table estimates (a problem's
    difficulty bends the true sigmoid: the mean of expit(logit(R) + z) is not R). With several seeds per n, the
    mean over its seeds' drawn curves (each seed drawn off the true one), what the averaged table's fit estimates.
    The draw is read once, so the function is cheap to call per n and compute."""
    if scenario.seeds > 1:
        difficulty, offsets, _, _ = drawn(scenario, seed)
    else:  # one seed: each n's curve is the truth's own, and only the difficulties (the draw's first numbers) matter
        difficulty = np.random.default_rng(seed).normal(0.0, 1.0, scenario.problems)
        offsets = {n: [np.zeros(2)] for n in scenario.curves}

    def reward(n: int, compute: np.ndarray) -> np.ndarray:
        x = np.log10(np.atleast_1d(np.asarray(compute, dtype=float)))
        a, mid, slope = scenario.curves[n]
        curves = [np.mean(expit(logit(reward_curve(x, scenario.r0, a + o[0], mid + o[1], slope))[:, None]
                                + difficulty[None, :]), axis=1) for o in offsets[n]]  # fmt: skip
        return np.mean(curves, axis=0)

    return reward


def expected_reward(scenario: Scenario, seed: int, n: int, compute: np.ndarray) -> np.ndarray:
    """n's expected avg@4 at `compute` on the validation problems of `draw(scenario, seed)` (`true_reward`)."""
    return true_reward(scenario, seed)(n, compute)


def fit_repetition(scenario: Scenario, seed: int, bootstrap: int = 30, counts: bool = True) -> dict:
    """The study fit of one repetition, anchored at its base model's measured avg@4, bootstrapped as the
    pipeline does (problems and seeds, with the base model's counts); without `counts`, as `isocompute fit`
    without --counts: the same number of replicas, each curve redrawn from its own residuals."""
    evals, problem_counts, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    replicas = resample_evals(problem_counts, K, bootstrap, seed, scenario.by, base) if counts else []
    options = FitOptions("avg@4", scenario.compute, scenario.by, base_reward=base_reward)
    return fit_study(evals, options, replicas=replicas, holdout_decades=0.5, resamples=0 if counts else bootstrap, seed=seed)


def recovery(scenario: Scenario, fit: dict, where_moving: bool = False, claimed: bool = False) -> float | None:
    """Share of the measured compute points where the fitted law's n* is within a factor 2 of the truth; with
    `where_moving`, of the points from the last one before the truth first moves to the last one; with
    `claimed`, of the points the law speaks for: every point for an `identified` law (it extrapolates), the
    material range for a partial one (a step, a plateau not reached: it predicts only there)."""
    points = pd.DataFrame(fit["optimum_points"])
    law = fit["optimum"]["n"]
    if not law["ok"]:
        return None
    compute = points["compute"].to_numpy()
    truth = scenario.true_optimum(compute)
    if where_moving:
        first_move = int(np.flatnonzero(truth != truth[0])[0])
        compute, truth = compute[first_move - 1 :], truth[first_move - 1 :]
    if claimed and law["identified"] != "identified":
        material = points.loc[[s["n"] == "material" for s in points["status"]], "compute"]
        inside = (compute >= material.min()) & (compute <= material.max())
        compute, truth = compute[inside], truth[inside]
    predicted = 2 ** optimum_curve(np.log10(compute), law["L"], law["k"], law["log10_c0"], law["b"])
    return float(np.mean(np.abs(np.log2(predicted / truth)) <= 1.0))


def bias_doublings(scenario: Scenario, fit: dict) -> tuple[float, str] | None:
    """The signed bias of n* in doublings: log2 of the fitted n* over the true n*, averaged over the fit's
    measured compute points (negative: n* put too low, as pruning by rank is said to do), and what was
    compared: the fitted law where there is one (`law`), else the kept data's frontier arm at each point
    (`points`), so a refused law still shows where the kept data put n*. None where every n has the same
    curve (no true n* to be biased from)."""
    if len(set(scenario.curves.values())) == 1:
        return None
    points = pd.DataFrame(fit["optimum_points"])
    if points.empty:
        return None
    compute = points["compute"].to_numpy(dtype=float)
    law = fit["optimum"]["n"]
    if law["ok"]:
        fitted = 2 ** optimum_curve(np.log10(compute), law["L"], law["k"], law["log10_c0"], law["b"])
        source = "law"
    else:
        fitted, source = points["n"].to_numpy(dtype=float), "points"
    return float(np.mean(np.log2(fitted / scenario.true_optimum(compute)))), source


def checkpoint_computes(scenario: Scenario) -> np.ndarray:
    """Every compute (or step, for a fixed-B study) at which some n was evaluated."""
    return np.array(sorted({s * (1 if scenario.batch else scenario.b_problem(n) * n) for n in scenario.curves
                            for s in scenario.steps(n)}), dtype=float)  # fmt: skip


def moves(scenario: Scenario) -> bool:
    """Whether the true n* changes over the measured compute."""
    return len(set(scenario.true_optimum(checkpoint_computes(scenario)).tolist())) > 1


def outside_range(fit: dict) -> int:
    """Frontier rows naming an n at a compute outside that curve's measured range (beyond the merge slack)."""
    ranges = {curve["key"]["n"]: curve["range"] for curve in fit["curves"]}
    slack = 10**0.05
    rows = fit["frontier"] + fit["optimum_points"]
    return sum(not ranges[r["n"]][0] / slack <= r["compute"] <= ranges[r["n"]][1] * slack for r in rows)


def point_lines(scenario: Scenario, fit: dict, tolerance: float = 0.005) -> list[str]:
    """Per compute point of a fit, why its law is or is not within a factor 2 of the truth there: the point's
    status, leaders and band, the truth's argmax, every n within `tolerance` of the true best (the truth's own
    leader set) and its margin over the next, and the law's n*. What a miss of `recovery` is made of."""
    law = fit["optimum"]["n"]
    ns = sorted(scenario.curves)
    lines = []
    for row in fit["optimum_points"]:
        compute = np.array([row["compute"]])
        true = np.array([scenario.reward(n, compute)[0] for n in ns])
        truth = ns[int(np.argmax(true))]
        ties = [n for n, value in zip(ns, true) if value >= true.max() - tolerance]
        text = (f"  C {row['compute']:10.4g} {row['status']['n']:9} leaders {row['leaders']['n']} "
                f"band {row.get('band', {}).get('n')} | truth {truth} within tolerance {ties} "
                f"margin {true.max() - np.sort(true)[-2]:.4f}")  # fmt: skip
        if law["ok"]:
            log2_n = optimum_curve(np.log10(compute), law["L"], law["k"], law["log10_c0"], law["b"])[0]
            text += f" | law {2**log2_n:.1f} {'within x2' if abs(log2_n - np.log2(truth)) <= 1.0 else 'MISS'}"
        lines.append(text)
    return lines


def main(
    seeds: Sequence[int] = (0, 1, 2), bootstrap: int = 30, names: Sequence[str] = (), points: bool = False
) -> None:
    """Per scenario, counts or not, and seed: the verdict, n* within x2 of the truth where it moves (over
    every point for a negative case), the replicas' agreement and the law's change with its interval; with
    `points`, every compute point below it (`point_lines`)."""
    print(f"{'scenario':30} {'counts':>6} {'seed':>4}  {'verdict':22} {'law':34} {'x2 moving':>9} {'x2 all':>6} "
          f"{'agree':>5}  {'rise [95 %]':22} holdout")  # fmt: skip
    for name, scenario in {**SCENARIOS, **CLOSE}.items():
        if names and name not in names:
            continue
        for counts in (True, False):
            for seed in seeds:
                fit = fit_repetition(scenario, seed, bootstrap, counts)
                law = fit["optimum"]["n"]
                verdict = law["identified"] if law["ok"] else law["kind"]
                text = f"L {law['L']:.2f} k {law['k']:.2f} C0 {law['log10_c0']:.2f} b {law['b']:.2f}" if law["ok"] else ""
                moving = recovery(scenario, fit, where_moving=moves(scenario))
                every = recovery(scenario, fit)
                rise = law.get("rise") or {}
                interval = rise.get("interval") or [np.nan, np.nan]
                rise_text = f"{rise['value']:+.2f} [{interval[0]:+.2f}, {interval[1]:+.2f}]" if rise else "-"
                check = fit["holdout"]["optimum"]["n"] if fit["holdout"].get("checkable") else fit["holdout"]
                held = f"x2 at {check['within_factor_2']:.0%}" if check.get("checkable") else "not checkable"
                share = lambda v: "-" if v is None else f"{v:.0%}"  # noqa: E731
                agree = "-" if law.get("agreement") is None else f"{law['agreement']:.0%}"
                print(f"{name:30} {'yes' if counts else 'no':>6} {seed:>4}  {verdict:22} {text:34} {share(moving):>9} "
                      f"{share(every):>6} {agree:>5}  {rise_text:22} {held}")  # fmt: skip
                if points:
                    print("\n".join(point_lines(scenario, fit)))


if __name__ == "__main__":
    arguments = sys.argv[1:]
    chosen = [a.split("=", 1)[1] for a in arguments if a.startswith("--family=")]
    seeds = tuple(int(s) for s in arguments if s.isdigit()) or (0, 1, 2)
    main(seeds, names=chosen, points="--points" in arguments)
