"""Where the rule's spend goes on the realistic tables: per arm, per round, why it ran on or stopped.

`python tests/realistic_spend.py [SEEDS...] [--family NAME]... [--counts yes|no] [--rules R1,R2,...]` replays
the rule (`isocompute`, as `tests/benchmark_peers.py` does) on each draw and prints, per arm, the share of its
full run's compute it reached, the share of the grid's rollouts it spent, how it stopped (rule, round), and
one letter per round saying why the round kept it running or stopped it:

    m  under min_steps          g  guard: the frontier's arm at C_top or a neighbour (n*/2, 2 n*)
    u  ceiling not identified (bound 1)   r  identified ceiling reaches the frontier's lower edge
    a  audit arm run past its stop        n  no band on the frontier
    B H P E T  stopped by bound, behind, plateau, extrapolate, tie    R  resumed    .  stopped earlier
    L  a resume held at the last decision (the `last_resume` part): stays stopped, censored
    G  the lower guard stopped, left behind a rising frontier (the `guard_behind` part)

The totals per draw say how much of the grid each reason held: an arm's rollouts over rung r are charged to
its letter in round r - 1 (rung 0's, which every arm runs before any decision, to '0'). The realistic tables'
spend is the point of docs/log/adaptive-peers.md's section "Where the realistic tables' spend goes".
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from benchmark_peers import FAMILIES, command_options, outcome, replay_draw, rules_option, verdict
from known_truth import draw

from isocompute.adaptive.decisions import stop_rule
from isocompute.adaptive.rungs import rung_step

LETTERS = {"bound": "B", "behind": "H", "plateau": "P", "extrapolate": "E", "tie": "T", "guard_behind": "G"}


def letter(decision: Mapping[str, Any]) -> str:
    """The one-letter reason of a round's decision on an arm (the module docstring's legend)."""
    reason = decision["reason"]
    if decision["action"] == "stop":
        return LETTERS[stop_rule(decision)]
    if decision["action"] == "resume":
        return "R"
    if decision["action"] == "hold":
        return "L"
    if reason.startswith("audit:"):
        return "a"
    if "min_steps" in reason:
        return "m"
    if "frontier's arm" in reason or "neighbour of the frontier" in reason:
        return "g"
    if "no bootstrap band" in reason:
        return "n"
    if "bounded only by" in reason:
        return "u"
    return "r"


def arm_spend(evals: Any, n: int, steps: int) -> float:
    """Training rollouts of arm n (every seed) up to `steps`, as `decisions._rollouts` counts them."""
    rows = evals[(evals["n"] == n) & (evals["step"] <= steps)]
    if rows.empty:
        return 0.0
    return float(rows.groupby("seed")["compute_rollouts"].max().sum() if "seed" in rows else rows["compute_rollouts"].max())


def arm_checkpoints(evals: Any) -> dict[int, list[tuple[int, float]]]:
    """Per arm, its checkpoints as (step, compute) pairs, the mean over its seeds, as `rung_step` reads them."""
    return {int(n): [(int(s), float(c)) for s, c in group.groupby("step")["compute_rollouts"].mean().items()]
            for n, group in evals.groupby("n")}  # fmt: skip


def timeline(result: Mapping[str, Any]) -> dict[int, list[str]]:
    """Per arm, one letter per round (the rounds after rungs 0 .. R-2; the last rung has no decision)."""
    lines: dict[int, list[str]] = {arm["n"]: [] for arm in result["arms"]}
    for round_ in result["rounds"]:
        decided = {d["n"]: letter(d) for d in round_["decisions"]}
        for n, line in lines.items():
            line.append(decided.get(n, "."))
    return lines


def charge(result: Mapping[str, Any], evals: Any) -> dict[str, float]:
    """The share of the grid's rollouts each reason held: an arm's spend over rung r goes to its letter in round
    r - 1 (rung 0, before any decision, to '0'); an arm runs a rung only where the round before kept it
    running (a stop letter or '.' ends it there)."""
    caps = result["rungs"]
    lines = timeline(result)
    checkpoints = arm_checkpoints(evals)
    held: dict[str, float] = defaultdict(float)
    for n, line in lines.items():
        previous = 0.0
        for index, cap in enumerate(caps):
            reason = "0" if index == 0 else line[index - 1]
            if reason in "BHPETLG.":
                continue
            spent = arm_spend(evals, n, rung_step(checkpoints[n], cap, index == len(caps) - 1))
            held[reason] += (spent - previous) / result["rollouts_full_grid"]
            previous = max(previous, spent)
    return dict(held)


def main(seeds: Sequence[int], names: Sequence[str], with_counts: Sequence[bool], rules: Sequence[str]) -> None:
    for name in names:
        totals: dict[str, list[float]] = defaultdict(list)
        for counts in with_counts:
            for seed in seeds:
                result = replay_draw(FAMILIES[name], seed, counts, ["isocompute"], rules=rules)["isocompute"]
                evals = draw(FAMILIES[name], seed)[0]
                score = outcome(name, result["fits"])
                print(f"\n{name} seed {seed} counts {'yes' if counts else 'no'}: spent {result['share_of_full_grid']:.0%}, "
                      f"{verdict(result['fits'])}, recovery {'-' if score[2] is None else f'{score[2]:.0%}'}, "
                      f"right {'yes' if score[1] else 'no'}; caps {len(result['rungs'])}, "
                      f"n_top per round {[r['n_top'] for r in result['rounds']]}")  # fmt: skip
                print(f"  {'n':>5} {'of run':>7} {'of grid':>8}  {'stop':24} rounds")
                lines = timeline(result)
                for arm in result["arms"]:
                    n = arm["n"]
                    stop = arm.get("stopped")
                    spent = arm_spend(evals, n, arm["steps"]) / result["rollouts_full_grid"]
                    how = "-" if stop is None else f"{stop['rule']} r{stop['round']} C={stop['cap']:.3g}"
                    print(f"  {n:>5} {arm['compute_reached'] / arm['compute_full']:>7.0%} {spent:>8.1%}  {how:24} "
                          f"{''.join(lines[n])}")
                held = charge(result, evals)
                print("  grid held by reason: " + ", ".join(f"{k} {v:.1%}" for k, v in sorted(held.items(), key=lambda kv: -kv[1])))
                audit = result["audit"]
                if audit is not None:
                    print(f"  audit: n = {audit['n']} stopped at round {audit['stopped_round']} "
                          f"({stop_rule(audit['stopped_by'])}), {audit['outcome']}")
                totals["share"].append(result["share_of_full_grid"])
                for key, value in held.items():
                    totals[key].append(value)
        runs = len(totals["share"])
        print(f"\n{name}: mean spent {sum(totals['share']) / runs:.1%} over {runs} draws; held by reason (mean): "
              + ", ".join(f"{k} {sum(v) / runs:.1%}" for k, v in sorted(totals.items(), key=lambda kv: -sum(kv[1])) if k != "share"))


if __name__ == "__main__":
    args, chosen = command_options(sys.argv[1:], ("--family", "--counts", "--rules"))
    main(
        tuple(int(s) for s in args) or (0, 1, 2),
        chosen["--family"] or ["realistic_slow", "realistic_late"],
        [c == "yes" for c in chosen["--counts"]] or [True, False],
        rules_option(chosen),
    )
