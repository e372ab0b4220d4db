"""Pilot 1 of docs/log/noise-scale.md, the default's half: does argmin B(n) along one trained run find the frontier's n*?

A pilot script, not a test: `python tests/pilot_noise_scale_default.py RESULTS [--study easy] [--run RUN]
[--groups N] [--jobs J]`, RESULTS a finished default study's results folder (its `train/`, `problem_sets/`,
`base_model/model/` and `fits/<study>/bp16/fits.json`). At the base model and at each checkpoint of one run,
B(n) (raw, `noise_scale`'s estimator with its pivotal 90 % interval) for every n of the study's grid, from
`--groups` groups drawn with replacement from the study's training problems; the predicted n* (argmin) and
its leaders. A checkpoint's compute is step x B_problem x n of that run; each frontier point
(`fits.avg@4.compute_rollouts.optimum_points`) is matched to the checkpoint nearest in log compute.
Agreement (`noise_scale.agrees`): the predicted n* within a factor 2 of the frontier's n*, or among the
frontier's leaders; printed beside every constant n. Pilot 1 ran with ties on both sides (the frontier's n*
among the predicted leaders counted too); docs/log/noise-scale.md says why that was dropped.
Each checkpoint draws its groups from its own generator (seed, step), so `--jobs` checkpoints run at once
and the result does not depend on how many.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from isocompute.mechanism.noise_scale import (
    NoiseScale,
    agrees,
    checkpoint_group_gradients,
    noise_scale,
    predict_n,
)
from isocompute.mechanism.probe import Policy
from isocompute.study.specs import SamplingSpec

RUN = {"easy": "bp16_n8_seed0", "hard": "bp16_n4_seed0"}  # the middle n of each study's bp16 grid


def fmt(value: float) -> str:
    return "inf" if not np.isfinite(value) else f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def measure(
    folder: Path,
    problems: pd.DataFrame,
    grid: list[int],
    sampling: SamplingSpec,
    checker: str,
    loss_type: str,
    rollouts_per_step: int,
    groups: int,
    replicas: int,
    seed: int,
) -> tuple[float, str, tuple[int, tuple[int, ...]] | None, list[float]]:
    """One checkpoint (the base model is step 0): its compute, its printed line, the predicted n* with its
    leaders, and each n's interval width (high / low)."""
    torch.set_num_threads(1)
    step = int(folder.name.split("-")[1]) if folder.name.startswith("checkpoint-") else 0
    policy = Policy(str(folder), sampling, checker)
    rng = np.random.default_rng([seed, step])
    scales: list[NoiseScale] = []
    cells = []
    started = time.perf_counter()
    for n in grid:
        chosen = problems.iloc[rng.integers(0, len(problems), groups)].reset_index(drop=True)
        rows = checkpoint_group_gradients(policy, chosen, n, seed + 1000 * step + n, loss_type)
        scale = noise_scale(rows, n, replicas=replicas, seed=seed + n)
        scales.append(scale)
        silent = float((np.abs(rows).sum(1) == 0).mean())
        cells.append(f"{n}:{fmt(scale.noise_scale)} [{fmt(scale.low)}, {fmt(scale.high)}] z{silent:.2f}")
    prediction = predict_n(scales)
    label = "base" if step == 0 else f"step {step}"
    said = "-" if prediction is None else f"{prediction.n} leaders {list(prediction.leaders)}"
    line = (f"C {step * rollouts_per_step:>9,} ({label}, {time.perf_counter() - started:.0f} s)  "
            + "  ".join(cells) + f"  -> {said}")  # fmt: skip
    widths = [s.high / s.low if s.low > 0 else float("inf") for s in scales]
    return (
        float(step * rollouts_per_step),
        line,
        None if prediction is None else (prediction.n, prediction.leaders),
        widths,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--study", default="easy")
    parser.add_argument("--run", default=None, help="run folder under train/<study> (default: the middle n)")
    parser.add_argument("--groups", type=int, default=1600)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="checkpoints measured at once (one core each)")
    args = parser.parse_args()
    root, study = args.results, args.study
    config = yaml.safe_load((root.parent / "config" / "config.yaml").read_text())
    sampling = SamplingSpec(**{k: config["sampling"][k] for k in ("temperature", "top_p", "max_new_tokens")})
    checker, loss_type = config["problems"]["checker"], config["training"]["loss_type"]
    run = args.run or RUN[study]
    b_problem, run_n = (int(x) for x in re.fullmatch(r"bp(\d+)_n(\d+)_seed\d+", run).groups())  # type: ignore[union-attr]
    grid = sorted({int(m.group(1)) for p in (root / "train" / study).iterdir()
                   if (m := re.fullmatch(rf"bp{b_problem}_n(\d+)_seed\d+", p.name))})  # fmt: skip
    fits = json.loads((root / "fits" / study / f"bp{b_problem}" / "fits.json").read_text())
    points = fits["fits"]["avg@4"]["compute_rollouts"]["optimum_points"]
    problems = pd.read_parquet(root / "problem_sets" / study / "train.parquet")
    folders = [root / "base_model" / "model"] + sorted(
        (root / "train" / study / run).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])
    )
    print(f"study {study}, run {run} (compute = step x {b_problem * run_n}), grid n = {grid}, "
          f"{args.groups} groups per n from {len(problems)} training problems, {args.replicas} replicas")  # fmt: skip
    settings = (
        problems,
        grid,
        sampling,
        checker,
        loss_type,
        b_problem * run_n,
        args.groups,
        args.replicas,
        args.seed,
    )
    with Pool(args.jobs) as pool:
        measured = pool.starmap(measure, [(folder, *settings) for folder in folders], chunksize=1)
    predictions: dict[float, tuple[int, tuple[int, ...]] | None] = {}
    widths: list[float] = []
    for compute, line, prediction, checkpoint_widths in measured:
        print(line)
        predictions[compute] = prediction
        widths += checkpoint_widths
    resolved = [w for w in widths if w < 2]
    print(f"\nintervals under a factor 2: {len(resolved)} of {len(widths)} (checkpoint, n)")
    trained = sorted(c for c in predictions if c > 0)
    header = "| compute | checkpoint C | frontier n* | frontier leaders | predicted n* | predicted leaders | agrees |"
    table = [header, "| --- | --- | --- | --- | --- | --- | --- |"]
    hits = strict = 0
    for point in points:
        nearest = min(trained, key=lambda c: abs(np.log(c / point["compute"])))
        predicted = predictions[nearest]
        ok = predicted is not None and agrees(predicted[0], point["n"], point["leaders"]["n"])
        hits += ok
        strict += predicted is not None and point["n"] / 2 <= predicted[0] <= point["n"] * 2
        shown = ("-", "-") if predicted is None else (str(predicted[0]), str(list(predicted[1])))
        table.append(f"| {point['compute']:,.0f} | {nearest:,.0f} | {point['n']} | {point['leaders']['n']} | "
                     f"{shown[0]} | {shown[1]} | {'yes' if ok else 'no'} |")  # fmt: skip
    print("\n".join(table))
    total = len(points)
    print(
        f"predictor: {hits}/{total} ({hits / total:.0%}); argmin alone within a factor 2, no ties: {strict}/{total}"
    )
    for n in grid:
        constant = sum(agrees(n, p["n"], p["leaders"]["n"]) for p in points)
        print(f"constant n = {n}: {constant}/{total} ({constant / total:.0%})")


if __name__ == "__main__":
    main()
