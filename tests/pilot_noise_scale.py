"""Pilot 1 of docs/log/noise-scale.md: does the n minimizing B(n) at a run's checkpoints find the frontier's n*?

A pilot script, not a test: `python tests/pilot_noise_scale.py [--estimate LEVELS] [--groups N]`.
The simulated policy's Easy preset (config/simulated/simulated.yaml): its run (B_problem 16, n = 8, seed 0)
is retrained as `isocompute simulate` trains it (`simulated_study.train_group`'s problem instance,
features and generator seeds), one replica per interference level, and stopped at its checkpoints. At
each one: the exact B(n) for every n of the grid (question A) and, for `--estimate` levels, B(n) from
`--groups` sampled groups with its interval (question B). The frontier's n* is pilot 1's phase diagram
in docs/log/simulated-policy.md (training avg@4), copied here verbatim.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from isocompute.mechanism.noise_scale import (
    gram_noise_scale,
    predict_n,
    simulated_gram,
    simulated_group_moments,
    simulated_logit_gradients,
    simulated_noise_scale,
)
from isocompute.mechanism.simulated_policy import Channels, SimulatedPolicies, base_logits, unit_features
from isocompute.mechanism.simulated_study import CHANNEL_KEYS, _run_seed, load_preset, make_problems, update
from isocompute.study.grid import checkpoint_steps

PRESET = "config/simulated/simulated.yaml"
B_PROBLEM, N, SEED = 16, 8, 0
# docs/log/simulated-policy.md, pilot 1's phase diagram (training avg@4; "?" unresolved by the bootstrap), verbatim.
COMPUTE = [512, 1.02e3, 2.07e3, 4.18e3, 8.44e3, 1.73e4, 3.52e4, 7.16e4, 1.45e5, 2.94e5, 5.95e5, 1.2e6, 2.44e6,
           4.94e6, 1e7]  # fmt: skip
FRONTIER = {
    "tabular": "8? | 8? | 8? | 8? | 8? | 8? | 4 | 4 | 4 | 4 | 4? | 8 | 8? | 16? | 16?",
    "shared_0.25": "8? | 8? | 8? | 8? | 8? | 8? | 4 | 4 | 4 | 4 | 4? | 8 | 8? | 8? | 16?",
    "shared_0.5": "8? | 8? | 8? | 8? | 8? | 4 | 4 | 4 | 4 | 4? | 4? | 8 | 8? | 8? | 8?",
    "shared_1": "8? | 8? | 8? | 8? | 8? | 4? | 4 | 4 | 4 | 4? | 4? | 8 | 8 | 8? | 8?",
    "shared_2": "8? | 8? | 8? | 8? | 4 | 4 | 4 | 4 | 4 | 4? | 4? | 8 | 8 | 8? | 8?",
    "features_1": "8? | 8? | 8? | 8? | 8? | 4? | 4 | 4 | 4 | 4? | 4? | 8 | 8 | 8? | 8?",
    "bias_1": "8? | 8? | 8? | 8? | 8? | 8? | 4 | 4 | 4 | 4 | 4? | 8 | 8? | 16? | 16?",
}


def agrees(predicted: int, frontier: int) -> bool:
    """Within a factor 2 of the frontier's n*."""
    return frontier / 2 <= predicted <= frontier * 2


def constant_agreement(n: int) -> tuple[int, int]:
    """The control the pilot showed necessary: how many frontier points a constant prediction n agrees with."""
    marks = [int(cell.strip().rstrip("?")) for row in FRONTIER.values() for cell in row.split("|")]
    return sum(agrees(n, frontier) for frontier in marks), len(marks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--estimate", default="tabular,shared_1", help="levels whose B(n) is also estimated")
    parser.add_argument("--groups", type=int, default=6400)
    parser.add_argument("--replicas", type=int, default=200)
    args = parser.parse_args()
    estimated = [level for level in args.estimate.split(",") if level]
    config = load_preset(PRESET)
    problems = make_problems(config)
    answers, dim = config["policy"]["answers"], config["policy"]["feature_dim"]
    recipe = update(config, B_PROBLEM * N)
    base = base_logits(problems.pass_rates, problems.correct, answers, recipe.temperature)
    levels = list(config["interference"])
    channels = [Channels(**{k: float(config["interference"][lv][k]) for k in CHANNEL_KEYS}) for lv in levels]
    features = [unit_features(len(base), dim, c.overlap, np.random.default_rng([config["seed"], 1])) for c in channels]
    policies = SimulatedPolicies(
        base=np.broadcast_to(base, (len(levels), *base.shape)),
        correct=np.broadcast_to(problems.correct, (len(levels), len(problems.correct))),
        features=np.stack(features),
        channels=channels,
        train=problems.train,
        update=recipe,
        b_problem=B_PROBLEM,
        n=N,
        seeds=[_run_seed(config["seed"], SEED, B_PROBLEM, N)] * len(levels),
    )
    training = config["training"]
    saves = checkpoint_steps(policies.batch, training["compute_min"], training["compute_max"], training["checkpoint_points"])
    grid = config["grid"]["n"]
    train = problems.train
    correct = problems.correct[train]
    ref = base[train]
    rows = []
    started = time.perf_counter()
    print(f"run bp{B_PROBLEM}_n{N}_seed{SEED} of {PRESET}; checkpoints at compute {[s * policies.batch for s in saves]}")
    for n in grid:
        hits, points = constant_agreement(n)
        print(f"control: the constant prediction n* = {n} agrees at {hits} of {points} frontier points")
    step = 0
    for save in saves:
        while step < save:
            policies.advance()
            step += 1
        compute = step * policies.batch
        logits_all = policies.logits()
        for r, level in enumerate(levels):
            logits = logits_all[r][train]
            exact = {}
            for n in grid:
                moments = [simulated_group_moments(logits[i], ref[i], correct[i], n, recipe) for i in range(len(train))]
                means = np.array([m for m, _ in moments])
                traces = np.array([np.trace(c) for _, c in moments])
                exact[n] = simulated_noise_scale(means, traces, features[r][train], channels[r], n)
            row = {"level": level, "compute": compute, "exact": exact, "exact_n": min(exact, key=exact.get)}
            if level in estimated:
                draw = np.random.default_rng([SEED, step, r])
                scales = []
                for n in grid:
                    chosen = draw.integers(0, len(train), args.groups)
                    grad_z = simulated_logit_gradients(logits, ref, correct, chosen, n, recipe, draw)
                    gram = simulated_gram(grad_z, chosen, features[r][train], channels[r])
                    scales.append(gram_noise_scale(gram, n, args.replicas, seed=step))
                row["estimate"] = scales
                row["prediction"] = predict_n(scales)
            rows.append(row)
            print(f"C {compute:>9,} {level:<12} exact B(n): " + " ".join(f"{n}:{exact[n]:,.0f}" for n in grid)
                  + f" -> {row['exact_n']}"
                  + (f" | estimated -> {row['prediction']}" if level in estimated else ""), flush=True)  # fmt: skip
    print(f"({time.perf_counter() - started:.0f} s)")
    report(rows, levels, estimated, policies.batch)


def report(rows: list[dict], levels: list[str], estimated: list[str], batch: int) -> None:
    """The agreement table: per level, the share of frontier points where the prediction is within a factor 2."""
    print("\n| level | compute | frontier n* | exact argmin B(n) | agrees | estimated n* (leaders) | agrees |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    totals: dict[str, list[bool]] = {"exact": [], "exact_resolved": [], "estimate": [], "estimate_vs_exact": []}
    summary = []
    for level in levels:
        mine = [r for r in rows if r["level"] == level]
        marks = [cell.strip() for cell in FRONTIER[level].split("|")]
        hits, resolved_hits, est_hits = [], [], []
        for compute, mark in zip(COMPUTE, marks):
            row = min(mine, key=lambda r: abs(np.log10(r["compute"]) - np.log10(compute)))
            frontier = int(mark.rstrip("?"))
            hit = agrees(row["exact_n"], frontier)
            hits.append(hit)
            if not mark.endswith("?"):
                resolved_hits.append(hit)
            estimate = ""
            est = ""
            if "prediction" in row:
                prediction = row["prediction"]
                est_hit = prediction is not None and agrees(prediction.n, frontier)
                est_hits.append(est_hit)
                totals["estimate_vs_exact"].append(prediction is not None and agrees(prediction.n, row["exact_n"]))
                estimate = "none" if prediction is None else f"{prediction.n} ({','.join(map(str, prediction.leaders))})"
                est = "yes" if est_hit else "no"
            print(f"| {level} | {compute:.3g} (run's {row['compute']:,}) | {mark} | {row['exact_n']} | "
                  f"{'yes' if hit else 'no'} | {estimate} | {est} |")  # fmt: skip
        totals["exact"] += hits
        totals["exact_resolved"] += resolved_hits
        totals["estimate"] += est_hits
        summary.append(f"| {level} | {np.mean(hits):.0%} ({sum(hits)}/{len(hits)}) | "
                       f"{np.mean(resolved_hits):.0%} ({sum(resolved_hits)}/{len(resolved_hits)}) | "
                       + (f"{np.mean(est_hits):.0%} ({sum(est_hits)}/{len(est_hits)}) |" if est_hits else "- |"))  # fmt: skip
    print("\n| level | exact: all points | exact: resolved points | estimated: all points |")
    print("| --- | --- | --- | --- |")
    print("\n".join(summary))
    for key, values in totals.items():
        if values:
            print(f"{key}: {np.mean(values):.1%} ({sum(values)}/{len(values)})")


if __name__ == "__main__":
    main()
