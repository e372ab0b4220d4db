"""The adaptive sweep replayed on the known-truth scenarios: what it spends and whether it keeps the law.
`python tests/adaptive_truth.py [SEEDS...]` prints, per scenario and seed, the share of the full grid's
rollouts the sweep spent, the oracle's share (each arm run only as far as the truth needs it), the recovery
of the full grid's n*(C), and the law verdicts of the full grid and of the sweep; tests/test_adaptive.py
asserts the paper-like case.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from known_truth import SCENARIOS, K, Scenario, draw, recovery

from isocompute.adaptive import SweepSettings, replay
from isocompute.fitted_study import FitOptions
from isocompute.bootstrap import resample_evals
from isocompute.frontier import SAME_COMPUTE_DECADES
from isocompute.metrics import summarize_counts
from isocompute.study_fits import fit_study

# The settings the figures are measured with: the CLI's defaults, min_steps at the default config's warm-up.
SETTINGS = SweepSettings(rung_factor=4.0, min_steps=10, audit_rungs=1)


def options(base_reward: float) -> FitOptions:
    return FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=base_reward)


def run(scenario: Scenario, seed: int, bootstrap: int = 30, settings: SweepSettings = SETTINGS) -> dict[str, Any]:
    """The replay of one repetition beside the full grid's fit of the same draw (same bootstrap seed)."""
    evals, counts, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    sweep = replay(evals, counts, options(base_reward), K, bootstrap, seed, settings, base)
    replicas = resample_evals(counts, K, bootstrap, seed, ("n",), base)
    full = fit_study(evals, options(base_reward), replicas=replicas, holdout_decades=0.5)
    checkpoints = {int(n): group["compute_rollouts"].to_numpy() for n, group in evals.groupby("n")}
    return {"sweep": sweep, "full": full, "oracle": oracle_rollouts(checkpoints, scenario.true_optimum)}


def oracle_rollouts(checkpoints: dict[int, np.ndarray], true_optimum: Any) -> float:
    """An oracle's spend: each arm to its last checkpoint where it is the true optimum (an arm never optimal
    costs nothing). A lower bound that no policy reaches, shown so the gap is visible."""
    total = 0.0
    for n, computes in checkpoints.items():
        needed = computes[true_optimum(computes) == n]
        total += float(needed.max()) if len(needed) else 0.0
    return total


def agreement(full: dict[str, Any], sweep: dict[str, Any]) -> float | None:
    """Share of the full grid's resolved compute points where the sweep's optimum (at the same compute point)
    is within a factor 2 of the full grid's; a point the sweep did not measure counts as a miss."""
    resolved = [p for p in full["optimum_points"] if p.get("resolved", {}).get("n")]
    if not resolved:
        return None
    theirs = pd.DataFrame(sweep["optimum_points"])
    hits = 0
    for point in resolved:
        near = np.abs(np.log10(theirs["compute"] / point["compute"])) < SAME_COMPUTE_DECADES
        hits += bool(near.any()) and abs(np.log2(theirs.loc[near, "n"].iloc[0] / point["n"])) <= 1.0
    return hits / len(resolved)


def verdict(fit: dict[str, Any]) -> str:
    law = fit["optimum"]["n"]
    return f"law L {law['L']:.2f} k {law['k']:.2f} C0 {law['log10_c0']:.2f} b {law['b']:.2f}" if law["ok"] else law["kind"]


def main(
    seeds: Sequence[int] = (0, 1, 2),
    bootstrap: int = 30,
    settings: SweepSettings = SETTINGS,
    names: Sequence[str] = tuple(SCENARIOS),
) -> None:
    print(f"settings: {settings}, bootstrap {bootstrap}")
    print(f"{'scenario':15} {'seed':>4} {'spent':>6} {'oracle':>6} {'n* vs full':>10} {'truth full/sweep':>16}  "
          f"{'full':40} {'sweep':40} audit")  # fmt: skip
    for scenario in (SCENARIOS[name] for name in names):
        for seed in seeds:
            result = run(scenario, seed, bootstrap, settings)
            sweep, full = result["sweep"], result["full"]
            share = agreement(full, sweep["fits"])
            truth = [recovery(scenario, fit) for fit in (full, sweep["fits"])]
            audit = sweep["audit"]
            audit_text = f"n={audit['n']} {audit['outcome']}" if audit else "-"
            print(f"{scenario.name:15} {seed:>4} {sweep['share_of_full_grid']:>6.0%} "
                  f"{result['oracle'] / sweep['rollouts_full_grid']:>6.0%} {'-' if share is None else f'{share:.0%}':>10} "
                  f"{'/'.join('-' if t is None else f'{t:.0%}' for t in truth):>16}  {verdict(full):40} "
                  f"{verdict(sweep['fits']):40} {audit_text}")  # fmt: skip
            stops = ", ".join(f"n={a['n']}@{a['compute_reached']:.3g}" for a in sweep["arms"] if "stopped" in a)
            print(f"{'':21}stopped: {stops or 'none'}")


if __name__ == "__main__":
    # python tests/adaptive_truth.py [SEEDS...] [--rung-factor F] [--scenario NAME]
    args = sys.argv[1:]
    option = {key: args.pop(args.index(key) + 1) for key in ("--rung-factor", "--scenario") if key in args}
    args = [a for a in args if a not in option]
    settings = SweepSettings(float(option.get("--rung-factor", SETTINGS.rung_factor)), SETTINGS.min_steps, SETTINGS.audit_rungs)
    names = [option["--scenario"]] if "--scenario" in option else list(SCENARIOS)
    main(tuple(int(s) for s in args) or (0, 1, 2), settings=settings, names=names)
