"""The adaptive rule against its peers on known truth: one table, every policy on the same draws.

`python tests/benchmark_peers.py [SEEDS...] [--family NAME]... [--policy NAME]... [--counts yes|no]
[--peer-min-steps N] [--pruner POLICY:KEY=VALUE]... [--rules R1,R2,...] [--replay-seed-offset K]` replays, on each family, with per-problem counts and
without (the residual bootstrap), and on each seed, the rule (`isocompute`) and its peers (`adaptive.peers`:
optuna's successive halving, Hyperband and median pruners, and top-k) on the same draw, each accounted and
fitted by the replay's one definition (`decisions.kept_outcome`). Each row: the share of the full grid's
rollouts spent, the kept data's verdict, its recovery (the law's n* within a factor 2 of the truth at each
measured compute point, `known_truth.recovery`), the signed bias of n* in doublings
(`known_truth.bias_doublings`), whether the outcome is right, and, for a peer, whether it beats the rule on
that draw. A summary per policy and family follows, and the wall time. `--replay-seed-offset K` replays each
draw with the replay's own random draws (bootstraps, forecasts, pruners) seeded at the draw's seed + K, the data
unchanged: main against itself, to size how far a draw's share moves on the replay's noise alone.

Families (the default): positives of the close families and the realistic tables of `prior_truth.py --plain`
(n* rising on close curves), negatives (one n best, every n the same curve), and the equal-step sweeps, a
constant and a rising truth. A positive is right when the kept data's law is within a factor 2 of the truth
at >= 80 % of its points; a negative when the kept data report no law (no false law). A peer *wins* a draw
where it spends less (by more than `SHARE_SLACK`) and its outcome is at least the rule's (`outcome`: recovery,
0 without a law, on a positive; 1 for no false law on a negative, within `OUTCOME_SLACK`), or where its
outcome is better and it spends no more. docs/log/adaptive-peers.md holds the measured table.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from adaptive_truth import SETTINGS, audited, options
from known_truth import CLOSE, K, Scenario, bias_doublings, draw, recovery
from prior_truth import BOOTSTRAP, REALISTIC

from isocompute.adaptive.decisions import stop_rule
from isocompute.adaptive.peers import POLICIES, replay_policy
from isocompute.adaptive.rungs import RULES, AdaptiveSettings
from isocompute.sampling.metrics import summarize_counts

POSITIVE = [
    "close_shared_saturating",
    "close_power2_rising",
    "close_two_seeds",
    "equal_steps_rising",
    "realistic_slow",
    "realistic_late",
]
NEGATIVE = ["close_constant", "close_flat", "equal_steps_constant"]
FAMILIES = {name: {**CLOSE, **REALISTIC}[name] for name in (*POSITIVE, *NEGATIVE)}
# A peer beats the rule on a draw only by more than these: 2 points of the grid's share, 0.05 of recovery.
SHARE_SLACK = 0.02
OUTCOME_SLACK = 0.05


def replay_draw(
    scenario: Scenario,
    seed: int,
    counts: bool,
    policies: Sequence[str],
    peer_settings: AdaptiveSettings = SETTINGS,
    pruners: Mapping[str, Mapping[str, Any]] | None = None,
    rules: Sequence[str] = RULES,
    replay_seed_offset: int = 0,
) -> dict[str, dict[str, Any]]:
    """Every policy's replay of one draw, with its per-problem counts or without (the residual bootstrap); the
    rule with its parts `rules`, the peers with `peer_settings` (the rule's by default) and the optuna pruners'
    settings in `pruners`; the replays' random draws seeded at `seed` + `replay_seed_offset`."""
    evals, problem_counts, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    table, base_counts = (problem_counts, base) if counts else (None, None)
    return {
        policy: replay_policy(
            policy,
            evals,
            table,
            options(base_reward),
            K,
            BOOTSTRAP,
            seed + replay_seed_offset,
            SETTINGS if policy == "isocompute" else peer_settings,
            base_counts,
            pruner=(pruners or {}).get(policy),
            rules=rules if policy == "isocompute" else RULES,
        )
        for policy in policies
    }


def pruner_settings(given: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`POLICY:KEY=VALUE` options as each optuna pruner's settings (integer values)."""
    settings: dict[str, dict[str, Any]] = {}
    for item in given:
        policy, setting = item.split(":", 1)
        key, value = setting.split("=", 1)
        settings.setdefault(policy, {})[key] = int(value)
    return settings


def outcome(name: str, fit: dict[str, Any]) -> tuple[float, bool, float | None]:
    """The score a peer is compared on, whether the outcome is right, and the recovery (None without a
    law)."""
    found = recovery(FAMILIES[name], fit)
    if name in NEGATIVE:
        right = not fit["optimum"]["n"]["ok"]
        return float(right), right, found
    return found or 0.0, (found or 0.0) >= 0.8, found


def verdict(fit: dict[str, Any]) -> str:
    law = fit["optimum"]["n"]
    if not law["ok"]:
        return law["kind"]
    return f"{law['identified']} law"


def stops(result: dict[str, Any]) -> str:
    """The arms the rule stopped, by the part that stopped each last (`bound` where a decision names none), as
    "part count"."""
    last = {
        decision["n"]: stop_rule(decision)
        for round_ in result.get("rounds", [])
        for decision in round_["decisions"]
        if decision["action"] == "stop"
    }
    made = Counter(last.values())
    return ", ".join(f"{rule} {count}" for rule, count in sorted(made.items())) + audited(result)


def beats(peer: tuple[float, float, bool], rule: tuple[float, float, bool]) -> str:
    """Whether a peer (share, score, right) beats the rule's on a draw, and how; '' where it does not. A win
    where neither outcome is right says so: it is a cheaper miss, not a cheaper law."""
    missed = "" if peer[2] or rule[2] else " (both miss)"
    if peer[0] < rule[0] - SHARE_SLACK and peer[1] >= rule[1] - OUTCOME_SLACK:
        return "WINS: spends less, outcome as good" + missed
    if peer[1] > rule[1] + OUTCOME_SLACK and peer[0] <= rule[0] + SHARE_SLACK:
        return "WINS: better outcome, spends no more" + missed
    return ""


def main(
    seeds: Sequence[int],
    names: Sequence[str],
    policies: Sequence[str],
    with_counts: Sequence[bool],
    peer_settings: AdaptiveSettings = SETTINGS,
    pruners: Mapping[str, Mapping[str, Any]] | None = None,
    rules: Sequence[str] = RULES,
    replay_seed_offset: int = 0,
) -> None:
    start = time.time()
    print(f"{SETTINGS}, bootstrap {BOOTSTRAP}; rules {list(rules)}; seeds {list(seeds)}; replay seed offset {replay_seed_offset}; "
          f"peers' min_steps {peer_settings.min_steps}"
          + (f", pruner settings {dict(pruners)}" if pruners else ""))  # fmt: skip
    print(
        f"{'policy':18} {'family':24} {'counts':>6} {'seed':>4} {'spent':>6}  {'verdict':20} {'recovery':>8} "
        f"{'bias':>12} {'right':>5}  vs the rule (the rule: its stops by part)"
    )
    rows = []
    for name in names:
        for counts in with_counts:
            for seed in seeds:
                results = replay_draw(FAMILIES[name], seed, counts, policies, peer_settings, pruners, rules, replay_seed_offset)
                scored = {
                    policy: (r["share_of_full_grid"], *outcome(name, r["fits"]))
                    for policy, r in results.items()
                }
                for policy, result in results.items():
                    share, score, right, found = scored[policy]
                    bias = bias_doublings(FAMILIES[name], result["fits"])
                    versus = (
                        ""
                        if policy == "isocompute" or "isocompute" not in scored
                        else beats((share, score, right), scored["isocompute"][:3])
                    )
                    rows.append(
                        {
                            "policy": policy,
                            "family": name,
                            "share": share,
                            "score": score,
                            "right": right,
                            "recovery": found,
                            "bias": None if bias is None else bias[0],
                            "wins": bool(versus),
                            "both_miss": "both miss" in versus,
                            "law": bool(result["fits"]["optimum"]["n"]["ok"]),
                        }
                    )
                    bias_text = "-" if bias is None else f"{bias[0]:+.2f} {bias[1]}"
                    print(
                        f"{policy:18} {name:24} {'yes' if counts else 'no':>6} {seed:>4} {share:>6.0%}  "
                        f"{verdict(result['fits']):20} {'-' if found is None else f'{found:.0%}':>8} "
                        f"{bias_text:>12} "
                        f"{'yes' if right else 'no':>5}  {versus or stops(result)}",
                        flush=True,
                    )
    print()
    print(
        f"summary over counts and seeds: {'policy':18} {'family':24} {'spent':>6} {'right':>7} "
        f"{'recovery':>8} "
        f"{'bias':>6} {'wins (both miss)':>16}"
    )
    for name in names:
        for policy in policies:
            mine = [r for r in rows if r["policy"] == policy and r["family"] == name]
            biases = [r["bias"] for r in mine if r["bias"] is not None]
            recovered = [r["recovery"] for r in mine if r["recovery"] is not None]
            print(
                f"{'':30} {policy:18} {name:24} {np.mean([r['share'] for r in mine]):>6.0%} "
                f"{sum(r['right'] for r in mine):>3}/{len(mine):<3} "
                f"{f'{np.mean(recovered):.0%}' if recovered else '-':>8} "
                f"{f'{np.mean(biases):+.2f}' if biases else '-':>6} "
                f"{wins(mine) if policy != 'isocompute' else '':>16}"
            )
    print(f"\n{'per policy':30} {'policy':18} {'truths':24} {'spent':>6} {'range':>8} {'right':>7} "
          f"{'laws':>5} {'wins (both miss)':>16}")  # fmt: skip
    for kind, family in (("positives", POSITIVE), ("negatives", NEGATIVE)):
        for policy in policies:
            mine = [r for r in rows if r["policy"] == policy and r["family"] in family]
            if not mine:
                continue
            shares = [r["share"] for r in mine]
            print(f"{'':30} {policy:18} {kind:24} {np.mean(shares):>6.0%} "
                  f"{min(shares):>3.0%}-{max(shares):<4.0%} "
                  f"{sum(r['right'] for r in mine):>3}/{len(mine):<3} {sum(r['law'] for r in mine):>5} "
                  f"{wins(mine) if policy != 'isocompute' else '':>16}")  # fmt: skip
    print(f"\nwall time {time.time() - start:.0f} s")


def command_options(args: list[str], names: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The seeds (positional) and each repeatable `--name value` option's values, for this script and the others
    that replay its draws (tests/realistic_spend.py)."""
    rest, chosen = list(args), {name: [] for name in names}
    while any(a in chosen for a in rest):
        at = next(i for i, a in enumerate(rest) if a in chosen)
        chosen[rest[at]].append(rest[at + 1])
        del rest[at : at + 2]
    return rest, chosen


def rules_option(chosen: Mapping[str, list[str]]) -> tuple[str, ...]:
    """The rule's parts named by the last `--rules R1,R2,...`, else every part (`adaptive.rungs.RULES`)."""
    return tuple(rule for rule in chosen["--rules"][-1].split(",") if rule) if chosen["--rules"] else RULES


def wins(rows: Sequence[Mapping[str, Any]]) -> str:
    """A peer's wins over the rule, and in brackets those where neither was right (a cheaper miss)."""
    return f"{sum(r['wins'] for r in rows)} ({sum(r['both_miss'] for r in rows)})"


if __name__ == "__main__":
    # python tests/benchmark_peers.py [SEEDS...] [--family NAME]... [--policy NAME]... [--counts yes|no]
    #     [--peer-min-steps N] [--pruner POLICY:KEY=VALUE]... [--rules R1,R2,...] [--replay-seed-offset K]
    args, chosen = command_options(sys.argv[1:], ("--family", "--policy", "--counts", "--peer-min-steps", "--pruner", "--rules", "--replay-seed-offset"))
    main(
        tuple(int(s) for s in args) or (0, 1, 2),
        chosen["--family"] or list(FAMILIES),
        [p for p in POLICIES if not chosen["--policy"] or p in chosen["--policy"]],
        [c == "yes" for c in chosen["--counts"]] or [True, False],
        replace(SETTINGS, min_steps=int(chosen["--peer-min-steps"][-1]))
        if chosen["--peer-min-steps"]
        else SETTINGS,
        pruner_settings(chosen["--pruner"]),
        rules_option(chosen),
        int(chosen["--replay-seed-offset"][-1]) if chosen["--replay-seed-offset"] else 0,
    )
