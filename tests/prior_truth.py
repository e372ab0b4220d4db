"""The adaptive sweep with a prior, on known truth in pairs: model A's law, fitted by the study fit, is model B's prior.

`python tests/prior_truth.py [SEEDS...] [--pair NAME] [--plain] [--rules R1,R2,...]` prints, per pair and seed, the share of B's full
grid spent with A's law as the prior and without one (the plain rule), their ratio, the verdict and recovery of
B's law (within a factor 2 of B's truth at every measured compute point), whether the prior fell back, where and
why, and the arms stopped. With `--plain` it replays the realistic tables (`REALISTIC`) without a prior. `--rules`
names the parts of the rule B's replay with the prior applies (`rungs.RULES`, a pilot of `rungs.PILOT_RULES` added;
the plain replay stays today's).
tests/test_prior.py asserts the figures; docs/log/adaptive-prior.md holds the measured ones.

Model B differs from A as a new model would. Shifted pairs: midpoints a factor 3 earlier or later, a plateau
one n lower, a smaller gain per doubling; on the paper preset's shared grid and on per-run power-of-two
schedules with two seeds. Mismatched pairs: B flat (every n the same curve), B falling, B's plateau three
doublings below A's. Refused pairs: A's law is refused (`close_not_monotone`, `noise` on every seed), so A's
prior is its material points' leader sets (`prior.prior_of_fit`); B is A's truth 3x later, or a rising one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from adaptive_truth import SETTINGS, audited, options, verdict
from known_truth import (
    CLOSE,
    PAPER_NS,
    SHARED_GRID,
    K,
    Scenario,
    close_ladder,
    dominated,
    draw,
    fit_repetition,
    recovery,
)

from isocompute.adaptive.decisions import replay, stop_rule
from isocompute.adaptive.prior import Prior, prior_of_fit
from isocompute.adaptive.rungs import RULES
from isocompute.sampling.metrics import summarize_counts

SHIFT = float(np.log10(3.0))  # a factor 3 in compute
BOOTSTRAP = 30


@dataclass(frozen=True)
class Pair:
    """Model A (whose fitted law is the prior) and model B (the new model's study), and whether B differs as a
    new model would (`shifted`) or contradicts the prior (`mismatched`)."""

    name: str
    a: Scenario
    b: Scenario
    mismatched: bool = False
    refused: bool = False


def _shared(name: str, first: tuple[float, float], **ladder: Any) -> Scenario:
    return Scenario(name, close_ladder(PAPER_NS, first, **{"top": 256, **ladder}), *SHARED_GRID)


def _two_seeds(name: str, mid: float, **ladder: Any) -> Scenario:
    """Per-run power-of-two checkpoints, two seeds per n, 400 problems: n* 2 -> 64 (`close_two_seeds`)."""
    ns = (2, 4, 8, 16, 32, 64, 128, 256)
    return Scenario(name, close_ladder(ns, (0.40, mid), **{"ceiling_step": 0.03, "mid_step": 0.45, "slope": 1.2, "top": 64, **ladder}),
                    1.0, 2.0**23, 0, seeds=2, problems=400)  # fmt: skip


def _not_monotone(name: str, mid: float) -> Scenario:
    """`close_not_monotone`'s truth (n* 8 -> 64 -> 16 -> 128 -> 256) with its first midpoint at 10^`mid`."""
    curves = dominated(close_ladder((8, 64, 16, 128, 256), (0.45, mid), 0.05, 0.5), {32: 16, 512: 256, 1024: 256}, drop=0.03)
    return Scenario(name, curves, *SHARED_GRID)


A_SHARED = CLOSE["close_shared_saturating"]
A_SEEDS = CLOSE["close_two_seeds"]
PAIRS = {
    pair.name: pair
    for pair in (
        Pair("later", A_SHARED, _shared("b_later", (0.45, 3.6 + SHIFT))),
        Pair("earlier", A_SHARED, _shared("b_earlier", (0.45, 3.6 - SHIFT))),
        Pair("plateau_lower", A_SHARED, _shared("b_plateau_128", (0.45, 3.6), top=128)),
        Pair("smaller_gain", A_SHARED, _shared("b_smaller_gain", (0.42, 3.6), ceiling_step=0.025)),
        Pair("seeds_later", A_SEEDS, _two_seeds("b_seeds_later", 2.8 + SHIFT)),
        Pair("seeds_earlier", A_SEEDS, _two_seeds("b_seeds_earlier", 2.8 - SHIFT)),
        Pair("flat", A_SHARED, CLOSE["close_flat"], mismatched=True),
        Pair("falling", A_SHARED, CLOSE["close_falling"], mismatched=True),
        Pair("plateau_3_below", A_SHARED, _shared("b_plateau_32", (0.45, 3.6), top=32), mismatched=True),
        Pair("refused_later", CLOSE["close_not_monotone"], _not_monotone("b_not_monotone_later", 3.6 + SHIFT), refused=True),
        Pair("refused_rising", CLOSE["close_not_monotone"], _shared("b_later", (0.45, 3.6 + SHIFT)), refused=True),
    )
}
SHIFTED = [name for name, pair in PAIRS.items() if not pair.mismatched and not pair.refused]
MISMATCHED = [name for name, pair in PAIRS.items() if pair.mismatched]
REFUSED = [name for name, pair in PAIRS.items() if pair.refused]

# Realistic replay tables without a prior: every n 8-1024 on the paper preset's shared grid, n* rising 8 -> 256
# on close curves that are still rising at C_max (their ceilings not yet identified), with counts.
REALISTIC = {
    scenario.name: scenario
    for scenario in (
        Scenario("realistic_slow", close_ladder(PAPER_NS, (0.45, 4.0), 0.03, 0.3, 0.8, top=256), *SHARED_GRID),
        Scenario("realistic_late", close_ladder(PAPER_NS, (0.40, 4.3), 0.035, 0.3, 1.0, top=256), *SHARED_GRID),
        CLOSE["close_shared_saturating"],
    )
}


def fitted_prior(scenario: Scenario, seed: int) -> Prior:
    """Model A's study fit as `isocompute fit` reports it (with counts, its verdict and replicas), as a prior:
    its law, or where the verdict refused it, its material points' leader sets."""
    fit = fit_repetition(scenario, seed, BOOTSTRAP)
    return prior_of_fit(fit, f"{scenario.name} seed {seed}")


# Today's rule, before the prior: the bound on a saturated arm's ceiling alone.
TODAY = ("bound",)


def replay_b(scenario: Scenario, seed: int, prior: Prior | None, rules: Sequence[str] = RULES) -> dict[str, Any]:
    evals, counts, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    return replay(evals, counts, options(base_reward), K, BOOTSTRAP, seed, SETTINGS, base, prior=prior, rules=rules)


def run_pair(pair: Pair, seed: int, rules: Sequence[str] = RULES) -> dict[str, Any]:
    """B's replay with A's fitted law (A drawn on the same seed) as its prior and the rule's parts `rules`, and with
    today's rule (no prior)."""
    prior = fitted_prior(pair.a, seed)
    return {"prior": prior, "with": replay_b(pair.b, seed, prior, rules), "plain": replay_b(pair.b, seed, None, TODAY)}


def on_every_core(function: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> list[Any]:
    """`function(*job)` for every job, in order, on every core (one process per job at most)."""
    with ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        return list(pool.map(function, *zip(*jobs)))


def run_pairs(names: Sequence[str], seeds: Sequence[int], rules: Sequence[str] = RULES) -> dict[tuple[str, int], dict[str, Any]]:
    """`run_pair` for every pair and seed, on every core."""
    jobs = [(name, seed) for name in names for seed in seeds]
    return dict(zip(jobs, on_every_core(run_pair, [(PAIRS[name], seed, rules) for name, seed in jobs])))


def run_plain(names: Sequence[str], seeds: Sequence[int]) -> dict[tuple[str, int], dict[str, Any]]:
    """`replay_b` of every realistic table and seed without a prior, on every core."""
    jobs = [(name, seed) for name in names for seed in seeds]
    return dict(zip(jobs, on_every_core(replay_b, [(REALISTIC[name], seed, None) for name, seed in jobs])))


def fallback(result: dict[str, Any]) -> str:
    state = result.get("prior") or {}
    if state.get("fallback") is None:
        return "followed"
    return f"fell back at round {state['fallback']['round']}, C = {state['fallback']['compute']:.3g} (leaders {state['fallback']['leaders']})"


def main(seeds: Sequence[int], names: Sequence[str], rules: Sequence[str] = RULES) -> None:
    print(f"{'pair':16} {'seed':>4} {'prior':>6} {'today':>6} {'ratio':>6} {'B recovery':>10}  {'B verdict (prior)':44} prior")
    results = run_pairs(names, seeds, rules)
    for name in names:
        for seed in seeds:
            result = results[(name, seed)]
            with_prior, plain = result["with"], result["plain"]
            share = recovery(PAIRS[name].b, with_prior["fits"])
            print(f"{name:16} {seed:>4} {with_prior['share_of_full_grid']:>6.0%} {plain['share_of_full_grid']:>6.0%} "
                  f"{with_prior['rollouts_spent'] / plain['rollouts_spent']:>6.2f} {'-' if share is None else f'{share:.0%}':>10}  "
                  f"{verdict(with_prior['fits']):44} {fallback(with_prior)}")  # fmt: skip
            stops = ", ".join(f"n={a['n']}@{a['compute_reached']:.3g} ({a['stopped']['rule']})" for a in with_prior["arms"]
                              if "stopped" in a)
            stops += audited(with_prior)
            law = result["prior"].law
            prior = (f"leaders at {len(result['prior'].points)} points" if law is None else
                     f"law L {law[0]:.2f} k {law[1]:.2f} C0 {law[2]:.2f} b {law[3]:.2f}")  # fmt: skip
            print(f"{'':22}prior's {prior}; stopped: {stops or 'none'}; plain's verdict {verdict(plain['fits'])}")


def main_plain(seeds: Sequence[int]) -> None:
    """Each realistic table replayed without a prior by today's rule, with the behind rule added, and with
    every rule: the share each spends shows what each part saves."""
    print(f"{'table':24} {'seed':>4} {'today':>6} {'+behind':>7} {'all':>6} {'recovery':>8}  verdict (all)")
    stages = [TODAY, ("bound", "behind"), RULES]
    jobs = [(scenario, seed, None, rules) for scenario in REALISTIC.values() for seed in seeds for rules in stages]
    results = iter(on_every_core(replay_b, jobs))
    for name, scenario in REALISTIC.items():
        for seed in seeds:
            today, behind, result = next(results), next(results), next(results)
            share = recovery(scenario, result["fits"])
            print(f"{name:24} {seed:>4} {today['share_of_full_grid']:>6.0%} {behind['share_of_full_grid']:>7.0%} "
                  f"{result['share_of_full_grid']:>6.0%} {'-' if share is None else f'{share:.0%}':>8}  "
                  f"{verdict(result['fits'])}")  # fmt: skip
            rules = {}
            for round_ in result["rounds"]:
                for decision in round_["decisions"]:
                    if decision["action"] == "stop":
                        rules[decision["n"]] = stop_rule(decision)
            stops = ", ".join(f"n={a['n']}@{a['compute_reached']:.3g} ({rules.get(a['n'])})" for a in result["arms"] if "stopped" in a)
            print(f"{'':30}stopped: {stops or 'none'}")


if __name__ == "__main__":
    # python tests/prior_truth.py [SEEDS...] [--pair NAME] [--plain] [--rules R1,R2,...]
    args = sys.argv[1:]
    option = {key: args.pop(args.index(key) + 1) for key in ("--pair", "--rules") if key in args}
    chosen = tuple(rule for rule in option.get("--rules", "").split(",") if rule) or RULES
    plain = "--plain" in args
    seeds = tuple(int(a) for a in args if a not in ("--plain", *option)) or (0, 1, 2)
    if plain:
        main_plain(seeds)
    else:
        main(seeds, [option["--pair"]] if "--pair" in option else list(PAIRS), chosen)
