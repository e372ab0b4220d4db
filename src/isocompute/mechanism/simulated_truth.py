"""The simulated policy as known truth: `isocompute simulate PRESET --truth SEEDS`.

A preset's fits read two training seeds per n. The simulator knows more: its metrics are exact given the
trained pass rates, and the only randomness is the training itself (epoch shuffles, sampled rollouts). So
the expected reward of each (n, compute point) is the mean over many training seeds, with a standard error
that shrinks as 1 / sqrt(seeds); from it the true n*(C), and whether n* moves by more than the fits'
tolerance, can be computed rather than argued, and set beside what the fit of the two seeds reports.

Written under the preset's results root:

    truth/<level>/seeds.csv                       the exact metric per truth seed, n and checkpoint
    truth/<level>/bp<B>/[on_train/]truth.csv      per compute point: true n*, its tie set, material moves
    truth/truth_vs_fit.md                         per study: the truth beside the fitted verdict and leaders

The numbers and what they say: docs/log/simulated-truth.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isocompute.errors import plain
from isocompute.files import write_atomically, write_text
from isocompute.fits.frontier import SAME_COMPUTE_DECADES, distinct_computes
from isocompute.mechanism.simulated_policy import SimulationError
from isocompute.mechanism.simulated_study import (
    ON_TRAIN,
    POLICY,
    exact_metrics,
    fit_tolerance,
    make_problems,
    train_replicas,
)

SEEDS_FILE = "seeds.csv"
# A difference of means within this many standard errors of zero is not told apart from noise.
NOISE_SE = 2.0


@dataclass(frozen=True)
class Study:
    """One fit of a preset (as `simulated_study.fit_levels` runs them): a level, a B_problem, an evaluation
    set."""

    level: str
    b_problem: int
    evaluated_on: str  # "validation" (held-out problems) or "train"

    @property
    def sub(self) -> str:
        """The study's folder below its level and B_problem: the fits' layout (`fit_one`'s `sub`)."""
        return f"{ON_TRAIN}/" if self.evaluated_on == "train" else ""

    @property
    def name(self) -> str:
        return f"{self.level} bp{self.b_problem} {self.evaluated_on}"


def studies(config: Mapping[str, Any], levels: Sequence[str]) -> list[Study]:
    return [
        Study(level, b, on)
        for level in levels
        for b in config["grid"]["b_problem"]
        for on in ("validation", "train")
    ]


def truth_seeds(config: Mapping[str, Any], count: int) -> list[int]:
    """`count` training seeds after the grid's: the truth is estimated on runs the fitted data never saw."""
    if count < 2:
        raise SimulationError(f"--truth: {count} seeds; a standard error needs at least 2")
    first = max(config["grid"]["seeds"]) + 1
    return list(range(first, first + count))


def seed_rewards(
    config: Mapping[str, Any], seeds: Sequence[int], levels: Sequence[str], log: Callable[[str], None] = print
) -> pd.DataFrame:
    """The exact metric (`fits.metric`) of every (level, B_problem, n, seed) run at each checkpoint, on the
    held-out and on the training problems: one row per run, checkpoint and evaluation set.

    The runs are trained by the study's own loop (`train_replicas`), every level and seed of a (B_problem, n)
    side by side, so a seed here is a run exactly as `isocompute simulate` would train it under that seed.
    """
    metric, k = config["fits"]["metric"], config["evaluation"]["k"]
    if metric not in exact_metrics(np.array([0.5]), k):
        raise SimulationError(
            f"fits.metric: {metric!r} has no exact value; known: {list(exact_metrics(np.array([0.5]), k))}"
        )
    unknown = [level for level in levels if level not in config["interference"]]
    if unknown:
        raise SimulationError(
            f"--levels: {plain(unknown)} are not levels of the preset; known: {list(config['interference'])}"
        )
    problems = make_problems(config)
    replicas = [(level, seed) for level in levels for seed in seeds]
    rows = []
    for b_problem in config["grid"]["b_problem"]:
        for n in config["grid"]["n"]:
            started = time.perf_counter()
            records, batch = train_replicas(config, problems, b_problem, n, replicas)
            for step, rates, _ in records:
                for r, (level, seed) in enumerate(replicas):
                    for on, which in (("validation", problems.val), ("train", problems.train)):
                        reward = exact_metrics(rates[r, which], k)[metric]
                        run = {"level": level, "b_problem": b_problem, "evaluated_on": on, "n": n}
                        at = {"seed": seed, "step": step, "compute": step * batch}
                        rows.append({**run, **at, "reward": reward})
            log(
                f"truth bp{b_problem} n={n}: {records[-1][0]} steps x {len(replicas)} runs "
                f"in {time.perf_counter() - started:.1f} s"
            )
    return pd.DataFrame(rows)


def mean_rewards(seeds: pd.DataFrame) -> pd.DataFrame:
    """Per study, n and checkpoint: the mean over seeds, its standard error (sd / sqrt(seeds)) and the seed
    count."""
    keys = ["level", "b_problem", "evaluated_on", "n", "compute"]
    grouped = seeds.groupby(keys)["reward"]
    table = grouped.agg(["mean", "std", "count"]).reset_index()
    table["se"] = table["std"] / np.sqrt(table["count"])
    return table.rename(columns={"count": "seeds", "std": "sd"})


def true_optimum(means: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """One study's true n*(C) at each compute point (`distinct_computes` of its checkpoints, as the fit reads
    them).

    An n is a candidate only where it was measured (at its checkpoint nearest the point). The tie set holds
    every candidate within the tolerance, or within `NOISE_SE` standard errors of the difference, of the
    best: more than one n there is a tie, and any of them may be n*. So n* is constant over a range of
    points exactly where some n is in every tie set there; the *held* set is the n that have been since the
    last move (the first point's tie set, narrowed point by point). n* moves materially where every held n
    measured there is behind the best by more than the tolerance and the noise: the held set becomes the
    point's tie set. `move` names both sets, `move_size` is the best's smallest margin over a held n and
    `move_sd` the per-seed sd of that difference (what a study of few seeds must see the move through). A
    point where no held n was measured says nothing about a move.
    """
    points = distinct_computes(means["compute"])
    nearest = np.abs(np.log10(means["compute"].to_numpy()[:, None] / points[None, :])).argmin(axis=1)
    means = means.assign(point=nearest)
    rows: list[dict[str, Any]] = []
    held: set[int] = set()
    for index, compute in enumerate(points):
        here = means[means["point"] == index]
        # a run whose last step overshoots compute_max also saves the step before: one value per n, the nearer
        nearer = np.abs(np.log10(here["compute"] / compute)).groupby(here["n"]).idxmin()
        here = here.loc[nearer].set_index("n").sort_index()
        best = int(here["mean"].idxmax())
        gap = here.loc[best, "mean"] - here["mean"]
        noise = NOISE_SE * np.sqrt(here.loc[best, "se"] ** 2 + here["se"] ** 2)
        ties = {int(n) for n in here.index if gap[n] <= max(tolerance, noise[n])}
        measured_held = held & set(here.index)
        move, size, spread = "", float("nan"), float("nan")
        if not held:
            held = ties
        elif measured_held and not measured_held & ties:
            closest = min(measured_held, key=lambda n: gap[n])
            move, size = f"{sorted(held)} -> {sorted(ties)}", float(gap[closest])
            spread = float(np.hypot(here.loc[best, "sd"], here.loc[closest, "sd"]))
            held = ties
        elif measured_held:
            held = (held & ties) | (held - set(here.index))
        others = gap.drop(best)
        rows.append({
            "compute": float(compute), "candidates": [int(n) for n in here.index], "n_star": best,
            "reward": float(here.loc[best, "mean"]), "ties": sorted(ties), "tie": len(ties) > 1,
            "margin": float(others.min()) if len(others) else float("nan"), "se_max": float(here["se"].max()),
            "held": sorted(held), "move": move, "move_size": size, "move_sd": spread,
        })  # fmt: skip
    return pd.DataFrame(rows)


def fitted(root: Path, study: Study, metric: str) -> dict[str, Any] | None:
    """The study's fit of `metric` over compute (its fits.json as `fit_one` writes it), or None where not
    fitted."""
    path = root / "fits" / study.level / f"bp{study.b_problem}" / study.sub / "fits.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["fits"][metric]["compute_rollouts"]


def beside_fit(truth: pd.DataFrame, fit: Mapping[str, Any] | None) -> pd.DataFrame:
    """The truth's points with the fit's leaders and status of n at the same compute point (within the fits'
    `SAME_COMPUTE_DECADES`); empty where the fit has no such point."""
    points = {float(p["compute"]): p for p in (fit or {}).get("optimum_points", [])}
    leaders, status = [], []
    for compute in truth["compute"]:
        match = [p for c, p in points.items() if abs(np.log10(c / compute)) < SAME_COMPUTE_DECADES]
        leaders.append(match[0].get("leaders", {}).get("n") if match else None)
        status.append(match[0].get("status", {}).get("n") if match else None)
    return truth.assign(fit_leaders=leaders, fit_status=status)


def verdict(fit: Mapping[str, Any] | None) -> str:
    """The fitted law of n* in one line: its direction, or its kind and reason where there is none."""
    if fit is None:
        return "not fitted"
    law = fit["optimum"]["n"]
    if law.get("ok"):
        return f"{law['direction']} law ({law.get('identified', 'identified')})"
    return f"no law ({law.get('kind')}): {law.get('reason')}"


def study_truth(config: Mapping[str, Any], study: Study, means: pd.DataFrame) -> pd.DataFrame:
    """One study's truth beside its fit, written to truth/<level>/bp<B>/[on_train/]truth.csv."""
    root = Path(config["results_root"])
    mine = means[
        (means["level"] == study.level)
        & (means["b_problem"] == study.b_problem)
        & (means["evaluated_on"] == study.evaluated_on)
    ]
    truth = true_optimum(mine, fit_tolerance(config))
    table = beside_fit(truth, fitted(root, study, config["fits"]["metric"]))
    out = root / "truth" / study.level / f"bp{study.b_problem}" / study.sub / "truth.csv"
    write_atomically(out, lambda partial: table.assign(policy=POLICY).to_csv(partial, index=False))
    return table


def markdown(config: Mapping[str, Any], study: Study, table: pd.DataFrame, means: pd.DataFrame) -> str:
    """The study's section of truth_vs_fit.md: its verdicts and one row per compute point. Each material move
    is set against the standard error of the same difference in the fitted data (per-seed sd over the root
    of the grid's seed count): a move within two of them cannot be seen in that data."""
    fit = fitted(Path(config["results_root"]), study, config["fits"]["metric"])
    moves = table[table["move"] != ""]
    data = len(config["grid"]["seeds"])
    truth = ("moves: " + "; ".join(f"{row.move} at C = {row.compute:.3g} by {row.move_size:.4f} (SE of that "
                                   f"difference in {data}-seed data {row.move_sd / np.sqrt(data):.4f})"
                                   for row in moves.itertuples())
             if len(moves) else "no material move")  # fmt: skip
    mine = means[
        (means["level"] == study.level)
        & (means["b_problem"] == study.b_problem)
        & (means["evaluated_on"] == study.evaluated_on)
    ]
    lines = [
        f"### {study.name}", "",
        (f"- truth ({int(mine['seeds'].min())} seeds, SE max {mine['se'].max():.5f}, "
        f"median {mine['se'].median():.5f}): {truth}"),
        f"- fit: {verdict(fit)}", "",
        "| C | true n* | mean | margin | tie set | move | not measured | fitted leaders | fit status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    every = sorted(set(mine["n"]))
    for row in table.itertuples():
        ties = ", ".join(map(str, row.ties)) if row.tie else ""
        missing = ", ".join(str(n) for n in every if n not in row.candidates)
        leaders = "" if row.fit_leaders is None else ", ".join(map(str, row.fit_leaders))
        lines.append(f"| {row.compute:.3g} | {row.n_star} | {row.reward:.4f} | {row.margin:.4f} | {ties} | "
                     f"{row.move} | {missing} | "
                     f"{leaders} | {row.fit_status or ''} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def read_seeds(config: Mapping[str, Any]) -> pd.DataFrame:
    """Every level's truth seeds written so far (none where no truth was run)."""
    paths = sorted((Path(config["results_root"]) / "truth").glob(f"*/{SEEDS_FILE}"))
    return pd.concat([pd.read_csv(path) for path in paths], ignore_index=True) if paths else pd.DataFrame()


def compare(config: Mapping[str, Any], log: Callable[[str], None] = print) -> str:
    """Each study with truth seeds beside its fit: the truth tables and truth/truth_vs_fit.md, also printed.

    Run after the truth's training and after every refit, so the comparison always reads the fits on disk.
    """
    seeds = read_seeds(config)
    if seeds.empty:
        return ""
    means = mean_rewards(seeds)
    levels = [level for level in config["interference"] if level in set(seeds["level"])]
    sections = [
        (f"# Simulated truth vs fit: {config['results_root']} ({config['fits']['metric']}, "
        f"tolerance {fit_tolerance(config)})"),
        "",
    ]
    for study in studies(config, levels):
        table = study_truth(config, study, means)
        sections.append(markdown(config, study, table, means))
    text = "\n".join(sections)
    write_text(text, Path(config["results_root"]) / "truth" / "truth_vs_fit.md")
    log(text)
    return text


def run_truth(
    config: Mapping[str, Any],
    count: int,
    levels: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> float:
    """Train `count` truth seeds of `levels` (every level by default), write each level's seeds.csv and
    compare with the fits on disk; return the seconds the training took."""
    chosen = list(levels or config["interference"])
    started = time.perf_counter()
    table = seed_rewards(config, truth_seeds(config, count), chosen, log)
    seconds = time.perf_counter() - started
    for level, rows in table.groupby("level", sort=False):
        out = Path(config["results_root"]) / "truth" / str(level) / SEEDS_FILE
        write_atomically(
            out, lambda partial, rows=rows: rows.assign(policy=POLICY).to_csv(partial, index=False)
        )
    log(f"simulated truth: {count} seeds x {len(chosen)} levels trained in {seconds:.0f} s")
    compare(config, log)
    return seconds
