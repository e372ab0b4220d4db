"""How low a stop read from a calibrated forecast could take the rule: the guards' floor, measured per draw.

`python tests/guard_floor.py [SEEDS...] [--pairs-only | --realistic-only] [--rules R1,R2,...]` replays the shifted pairs with model A's
law as the prior (`prior_truth.PAIRS`) and the realistic tables without one (`prior_truth.REALISTIC`'s two still
rising tables), each with every part of the rule (or the parts `--rules` names, a pilot of `rungs.PILOT_RULES`
added), and prints per draw:

- the share of the grid spent, and whether the kept data's law is right (within a factor 2 of the truth at >= 80 %
  of its points, `known_truth.recovery`);
- **the last-rung bound**: that share less what every arm but the frontier's at the last decision spent on the
  last rung (C_max / 2 -> C_max). The forecast is calibrated only from half an arm's run
  (docs/log/adaptive-extrapolation.md), which with rung factor 2 is the last decision, and the guards n*/2 and
  2 n* stop on nothing else but the forecast (and `guard_behind`, n*/2 only). So no part that reads the
  guards' futures only where calibrated spends less than this, whatever its threshold;
- per arm the forecast read at the last decision (every arm past half its run but the frontier's): its margin,
  the frontier's lower edge at C_top less the forecast's upper edge at the arm's end (with the pilot part
  `forecast_frontier`, also "arm": its least margin against the frontier's arm's forecast over its remaining range).
  It stops where a margin exceeds `fits.tolerance`; its role (n*/2, 2 n*, other), and the truth's gap at its end (the best arm's expected
  reward there less its own, `known_truth.true_reward`): within the tolerance it is a true leader at C_max, and
  a stop there would cut the frontier's own measurement;
- **the oracle's bound**: the share spent less the last rung of every arm the truth puts more than the tolerance
  behind at its end, the least a rule that stops at the last decision exactly the arms that cannot lead could
  spend.

docs/log/adaptive-peers.md's section "The guards' floor" holds what it printed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from known_truth import Scenario, draw, recovery, true_reward
from prior_truth import PAIRS, REALISTIC, SHIFTED, fitted_prior, on_every_core, replay_b
from realistic_spend import arm_checkpoints, arm_spend

from isocompute.adaptive.rungs import RULES, guard_arms, rung_step
from isocompute.fits.leaders import DEFAULT_TOLERANCE

TABLES = ("realistic_slow", "realistic_late")


def last_rung_bound(result: Mapping[str, Any], evals: Any, cut: Sequence[int] | None = None) -> float:
    """The share spent less the last-rung rollouts of the arms `cut` (every arm but the frontier's arm at the
    last decision where None)."""
    caps, n_top = result["rungs"], result["rounds"][-1]["n_top"]
    checkpoints = arm_checkpoints(evals)
    saved = 0.0
    for arm in result["arms"]:
        n = arm["n"]
        half = rung_step(checkpoints[n], caps[-2], False)
        if (n == n_top if cut is None else n not in cut) or arm["steps"] <= half:
            continue
        saved += arm_spend(evals, n, arm["steps"]) - arm_spend(evals, n, half)
    return result["share_of_full_grid"] - saved / result["rollouts_full_grid"]


def truth_gaps(scenario: Scenario, seed: int, evals: Any) -> dict[int, float]:
    """Per arm, the truth's gap at its end: the best arm's expected reward there less its own."""
    ends = evals.groupby("n")["compute_rollouts"].max()
    truth = true_reward(scenario, seed)  # the draw read once, not per arm and end
    gaps = {}
    for n, end in ends.items():
        at = np.array([float(end)])
        values = {int(other): float(truth(int(other), at)[0]) for other in ends.index}
        gaps[int(n)] = max(values.values()) - values[int(n)]
    return gaps


def forecast_reads(result: Mapping[str, Any]) -> list[tuple[int, str, float, float, float | None]]:
    """At the last decision, each arm the forecast read: (n, role, share of its run seen, margin, and with the
    pilot part `forecast_frontier` its margin against the frontier's arm's forecast)."""
    last = result["rounds"][-1]
    arms = sorted(arm["n"] for arm in result["arms"])
    n_top = last["n_top"]
    guards = guard_arms(arms, n_top) if n_top is not None else []
    reads = []
    for decision in last["decisions"]:
        numbers = decision["numbers"]
        if "forecast_margin" not in numbers and numbers.get("rule") != "extrapolate":
            continue
        n = decision["n"]
        role = "other" if n not in guards else ("n*/2" if n < n_top else "2 n*")
        margin = numbers.get("forecast_margin", numbers.get("margin"))
        against = numbers.get("frontier_arm_margin")
        reads.append((n, role, float(numbers["seen"]), float(margin), None if against is None else float(against)))
    return reads


def pair_draw(name: str, seed: int, rules: Sequence[str]) -> tuple[dict[str, Any], Any]:
    """B's replay with A's fitted law as its prior (the rule's parts `rules`), and B's table."""
    pair = PAIRS[name]
    return replay_b(pair.b, seed, fitted_prior(pair.a, seed), rules), draw(pair.b, seed)[0]


def table_draw(name: str, seed: int, rules: Sequence[str]) -> tuple[dict[str, Any], Any]:
    """A realistic table's replay without a prior (the rule's parts `rules`), and the table."""
    return replay_b(REALISTIC[name], seed, None, rules), draw(REALISTIC[name], seed)[0]


def report(
    kind: str, names: Sequence[str], seeds: Sequence[int], function: Any, scenarios: Mapping[str, Scenario], rules: Sequence[str]
) -> None:
    jobs = [(name, seed) for name in names for seed in seeds]
    results = on_every_core(function, [(name, seed, rules) for name, seed in jobs])
    spent, bounds, oracles, rights, kept = [], [], [], [], {"leader": 0, "behind": 0}
    print(f"\n{kind}, rules {list(rules)}: {'draw':24} {'spent':>6} {'bound':>6} {'oracle':>6} {'right':>5}  n* at the last "
          "decision; forecast reads (n role seen margin truth-gap)")
    for (name, seed), (result, evals) in zip(jobs, results):
        gaps = truth_gaps(scenarios[name], seed, evals)
        bound = last_rung_bound(result, evals)
        oracle = last_rung_bound(result, evals, [n for n, gap in gaps.items() if gap > DEFAULT_TOLERANCE])
        share = recovery(scenarios[name], result["fits"])
        right = share is not None and share >= 0.8
        rights.append(right)
        spent.append(result["share_of_full_grid"])
        bounds.append(bound)
        oracles.append(oracle)
        reads = forecast_reads(result)
        for n, _, _, margin, against in reads:
            if max(margin, against or -1.0) <= DEFAULT_TOLERANCE:
                kept["leader" if gaps[n] <= DEFAULT_TOLERANCE else "behind"] += 1
        line = "; ".join(f"{n} {role} {seen:.0%} {margin:+.3f}{'' if against is None else f' arm {against:+.3f}'}"
                         f"{' STOP' if max(margin, against or -1.0) > DEFAULT_TOLERANCE else ''} {gaps[n]:+.3f}"
                         for n, role, seen, margin, against in reads)  # fmt: skip
        print(f"{'':{len(kind) + 2}}{name + ' s' + str(seed):24} {result['share_of_full_grid']:>6.1%} {bound:>6.1%} "
              f"{oracle:>6.1%} {'yes' if right else 'no':>5}  n* {result['rounds'][-1]['n_top']}; {line or 'none'}")
    runs = len(spent)
    print(f"{kind}: mean spent {sum(spent) / runs:.1%}, mean last-rung bound {sum(bounds) / runs:.1%} (least "
          f"{min(bounds):.1%}), mean oracle's bound {sum(oracles) / runs:.1%} over {runs} draws, {sum(rights)} right; arms the forecast kept "
          f"(margin <= {DEFAULT_TOLERANCE:g}): {kept['leader']} true leaders at their end, {kept['behind']} behind by more")


if __name__ == "__main__":
    args = sys.argv[1:]
    rules = tuple(args.pop(args.index("--rules") + 1).split(",")) if "--rules" in args else RULES
    seeds = tuple(int(a) for a in args if not a.startswith("--")) or (6, 7, 8)
    if "--realistic-only" not in args:
        report("pairs", SHIFTED, seeds, pair_draw, {name: PAIRS[name].b for name in SHIFTED}, rules)
    if "--pairs-only" not in args:
        report("realistic", TABLES, seeds, table_draw, REALISTIC, rules)
