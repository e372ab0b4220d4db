"""The adaptive sweep replayed on the known-truth scenarios: what it spends and whether it keeps the law.
`python tests/adaptive_truth.py [SEEDS...] [--rung-factor F] [--scenario NAME] [--disagreement R]` prints,
per scenario and seed, the share of the full grid's rollouts the adaptive sweep spent, the oracle's share (each arm
run only as far as the truth needs it), the recovery of the full grid's n*(C), and the law verdicts of the
full grid and of the adaptive sweep; tests/test_adaptive.py asserts the paper-like case.

With `--disagreement R` it also measures the bootstrap's own disagreement rate, the yardstick for "the
adaptive sweep reports a law the full grid refuses, or refuses one it reports": the share of R bootstrap replicas of
the draw (its validation problems drawn with replacement, the same draw for every checkpoint and the base
model) on which the full grid's verdict (a law, or which refusal) differs from its verdict on the draw
itself, each replica fitted exactly as the draw is, with its own inner bootstrap. The adaptive sweep's data are a
subset of the same draw, so the noise that separates the two verdicts is the draw's sampling noise as the
bootstrap sees it, not a new draw of the truth; and the measure needs no known truth, so it applies to a
real study's table as well.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from known_truth import CLOSE, SCENARIOS, K, Scenario, draw, recovery

from isocompute.adaptive.decisions import AdaptiveSettings, replay, stop_rule
from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.frontier import SAME_COMPUTE_DECADES
from isocompute.fits.study_fit import fit_study
from isocompute.sampling.metrics import summarize_counts

# The settings the figures are measured with: the CLI's defaults (rung factor 2; the first tables used 4, and
# `--rung-factor 4` replays them), min_steps at the default config's warm-up.
SETTINGS = AdaptiveSettings(rung_factor=2.0, min_steps=10, audit_rungs=1)


def audited(result: dict[str, Any]) -> str:
    """A replay's audit, where it has one, as the benchmarks print it: its arm, the part whose stop it audits
    (`decisions.stop_rule`) and its outcome."""
    audit = result.get("audit")
    if not audit:
        return ""
    return f"; audit n={audit['n']} ({stop_rule(audit['stopped_by'])}): {audit['outcome']}"


def options(base_reward: float) -> FitOptions:
    return FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=base_reward)


def run(
    scenario: Scenario, seed: int, bootstrap: int = 30, settings: AdaptiveSettings = SETTINGS, disagreement: int = 0
) -> dict[str, Any]:
    """The replay of one repetition beside the full grid's fit of the same draw (same bootstrap seed), and
    with `disagreement` > 0 the full grid's verdicts on that many bootstrap replicas of the draw."""
    evals, counts, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    adaptive = replay(evals, counts, options(base_reward), K, bootstrap, seed, settings, base)
    replicas = resample_evals(counts, K, bootstrap, seed, ("n",), base)
    full = fit_study(evals, options(base_reward), replicas=replicas, holdout_decades=0.5)
    checkpoints = {int(n): group["compute_rollouts"].to_numpy() for n, group in evals.groupby("n")}
    rng = np.random.default_rng([seed, 1])
    replica_verdicts = [full_verdict(*redraw(counts, base, rng), bootstrap, seed) for _ in range(disagreement)]
    return {"adaptive": adaptive, "full": full, "oracle": oracle_rollouts(checkpoints, scenario.true_optimum),
            "replica_verdicts": replica_verdicts}  # fmt: skip


def redraw(counts: pd.DataFrame, base: pd.DataFrame, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A bootstrap replica of a draw as a table of its own: the validation problems drawn with replacement, one
    draw for every checkpoint and the base model, each copy of a problem renamed so that the replica's own
    bootstrap treats it as a problem (a double bootstrap)."""
    ids = np.sort(counts["id"].unique())
    picked = pd.DataFrame({"id": ids[rng.integers(0, len(ids), len(ids))], "copy": [f"r{i:03d}" for i in range(len(ids))]})
    relabel = lambda table: table.merge(picked, on="id").drop(columns="id").rename(columns={"copy": "id"})
    return relabel(counts), relabel(base)


def full_verdict(counts: pd.DataFrame, base: pd.DataFrame, bootstrap: int, seed: int) -> str:
    """The full grid's verdict (`verdict_kind`) on a table given by its per-problem counts, fitted as `run`
    fits a draw (its evaluation table recomputed from the counts, the same inner bootstrap); no held-out
    check, which does not enter the verdict."""
    keys = [c for c in counts.columns if c not in ("id", "n_correct")]
    evals = pd.DataFrame([{**dict(zip(keys, key)), **summarize_counts(group["n_correct"].to_numpy(), K)}
                          for key, group in counts.groupby(keys)])  # fmt: skip
    base_reward = summarize_counts(base["n_correct"].to_numpy(), K)["avg@4"]
    replicas = resample_evals(counts, K, bootstrap, seed, ("n",), base)
    return verdict_kind(fit_study(evals, options(base_reward), replicas=replicas))


def verdict_kind(fit: dict[str, Any]) -> str:
    """What "the same verdict" compares: a law (whatever its parameters), or the kind of refusal."""
    law = fit["optimum"]["n"]
    return "law" if law["ok"] else law["kind"]


def oracle_rollouts(checkpoints: dict[int, np.ndarray], true_optimum: Any) -> float:
    """An oracle's spend: each arm to its last checkpoint where it is the true optimum (an arm never optimal
    costs nothing). A lower bound that no policy reaches, shown so the gap is visible."""
    total = 0.0
    for n, computes in checkpoints.items():
        needed = computes[true_optimum(computes) == n]
        total += float(needed.max()) if len(needed) else 0.0
    return total


def agreement(full: dict[str, Any], adaptive: dict[str, Any]) -> float | None:
    """Share of the full grid's resolved compute points where the adaptive sweep's optimum (at the same compute point)
    is within a factor 2 of the full grid's; a point the adaptive sweep did not measure counts as a miss."""
    resolved = [p for p in full["optimum_points"] if (p.get("resolved") or {}).get("n")]
    if not resolved:
        return None
    theirs = pd.DataFrame(adaptive["optimum_points"])
    hits = 0
    for point in resolved:
        near = np.abs(np.log10(theirs["compute"] / point["compute"])) < SAME_COMPUTE_DECADES
        hits += bool(near.any()) and abs(np.log2(theirs.loc[near, "n"].iloc[0] / point["n"])) <= 1.0
    return hits / len(resolved)


def verdict(fit: dict[str, Any]) -> str:
    law = fit["optimum"]["n"]
    if not law["ok"]:
        return law["kind"]
    return f"{law['identified']} L {law['L']:.2f} k {law['k']:.2f} C0 {law['log10_c0']:.2f} b {law['b']:.2f}"


def main(
    seeds: Sequence[int] = (0, 1, 2),
    bootstrap: int = 30,
    settings: AdaptiveSettings = SETTINGS,
    names: Sequence[str] = tuple(SCENARIOS),
    disagreement: int = 0,
) -> None:
    """The replay table; with `disagreement` replicas per draw, the column `boot` (the share of replicas on
    which the full grid's verdict differs from its verdict on the draw) and a line per scenario comparing
    that rate with how often the adaptive sweep's verdict differed from the full grid's."""
    print(f"settings: {settings}, bootstrap {bootstrap}" + (f", {disagreement} replicas per draw for `boot`" if disagreement else ""))
    print(f"{'scenario':15} {'seed':>4} {'spent':>6} {'oracle':>6} {'n* vs full':>10} {'truth full/adaptive':>19}  "
          f"{'full':40} {'adaptive':40} {'boot' if disagreement else ''}{' ' if disagreement else ''}audit")  # fmt: skip
    for scenario in ({**SCENARIOS, **CLOSE}[name] for name in names):
        rates, differ = [], 0
        for seed in seeds:
            result = run(scenario, seed, bootstrap, settings, disagreement)
            adaptive, full = result["adaptive"], result["full"]
            share = agreement(full, adaptive["fits"])
            truth = [recovery(scenario, fit) for fit in (full, adaptive["fits"])]
            audit = adaptive["audit"]
            audit_text = f"n={audit['n']} {audit['outcome']}" if audit else "-"
            differ += verdict_kind(full) != verdict_kind(adaptive["fits"])
            boot = ""
            if disagreement:
                rates.append(float(np.mean([v != verdict_kind(full) for v in result["replica_verdicts"]])))
                boot = f"{rates[-1]:>4.0%} "
            print(f"{scenario.name:15} {seed:>4} {adaptive['share_of_full_grid']:>6.0%} "
                  f"{result['oracle'] / adaptive['rollouts_full_grid']:>6.0%} {'-' if share is None else f'{share:.0%}':>10} "
                  f"{'/'.join('-' if t is None else f'{t:.0%}' for t in truth):>16}  {verdict(full):40} "
                  f"{verdict(adaptive['fits']):40} {boot}{audit_text}")  # fmt: skip
            stops = ", ".join(f"n={a['n']}@{a['compute_reached']:.3g}" for a in adaptive["arms"] if "stopped" in a)
            print(f"{'':21}stopped: {stops or 'none'}")
            if disagreement:
                others = sorted(set(result["replica_verdicts"]))
                print(f"{'':21}replicas' verdicts: " + ", ".join(f"{v} {result['replica_verdicts'].count(v)}" for v in others))
        if disagreement:
            print(f"{scenario.name}: the full grid's own disagreement rate {np.mean(rates):.0%} (mean over seeds); "
                  f"the adaptive sweep's verdict differed from the full grid's in {differ} of {len(seeds)}")


if __name__ == "__main__":
    # python tests/adaptive_truth.py [SEEDS...] [--rung-factor F] [--scenario NAME] [--disagreement R]
    args = sys.argv[1:]
    option = {key: args.pop(args.index(key) + 1) for key in ("--rung-factor", "--scenario", "--disagreement") if key in args}
    args = [a for a in args if a not in option]
    settings = AdaptiveSettings(float(option.get("--rung-factor", SETTINGS.rung_factor)), SETTINGS.min_steps, SETTINGS.audit_rungs)
    names = [option["--scenario"]] if "--scenario" in option else list(SCENARIOS)
    main(tuple(int(s) for s in args) or (0, 1, 2), settings=settings, names=names,
         disagreement=int(option.get("--disagreement", 0)))  # fmt: skip
