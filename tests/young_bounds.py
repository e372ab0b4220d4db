"""The bound's stops on young ceilings: every `bound` stop of the rule, and whether it held.

`python tests/young_bounds.py [SEEDS...] [--family NAME]... [--counts yes|no] [--rules R1,R2,...]` replays the
rule (`isocompute`, as `tests/benchmark_peers.py` does; the realistic tables and the positive families by
default, seeds 0-2, with counts and without) and lists, per draw, its share of the grid, verdict and whether it
is right, then every stop by the ceiling bound (`decisions.decide`'s first part): its round, the arm n and its
steps, the share of its run it had seen (`decisions.run_seen`), whether its last measured point lay past the
midpoint of the curve the round fitted and past the truth's midpoint (`known_truth`), what became of the stop
(reversed by the audit's second look or a later resume, stopped again at the audit's second look, or stood),
and whether the arm leads in the truth beyond the compute it had reached (the true n* at a checkpoint past it:
a stop there that stands loses an arm that owns the high-compute frontier). A summary per family and in all
follows.

The question is docs/log/adaptive-peers.md's "The bound on young ceilings": how often the bound's ceiling is
identified on a curve that has not yet passed its midpoint, and stops an arm the audit then has to save.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from benchmark_peers import FAMILIES, POSITIVE, command_options, outcome, replay_draw, rules_option, verdict
from known_truth import Scenario, checkpoint_computes

from isocompute.adaptive import decisions
from isocompute.fits.forms import RewardFit, reward_fit_from_json

# The fit each round decided on, as `decisions.decide` saw it: the replay keeps only the decisions, and the
# bound's stop does not name the fitted midpoint, so the script listens to the fits (one call per round).
SEEN: list[Mapping[str, Any]] = []
# The fates of a stop that held (`fate`): no later round resumed it, or the audit ran it on and stopped it again.
STOOD = ("stood", "audit: stop")
_decide = decisions.decide


def _listening_decide(fit: Mapping[str, Any], *args: Any, **kwargs: Any) -> list[decisions.Decision]:
    SEEN.append(fit)
    return _decide(fit, *args, **kwargs)


decisions.decide = _listening_decide


def fate(result: Mapping[str, Any], n: int, round_: int) -> str:
    """What became of arm n's bound stop at round `round_`: reversed (the audit's second look ran it on, or a later
    round resumed it, as the plateau's pause does), stopped again at the audit's second look (by the bound, or by
    another part), run on by the audit to the grid's end, or stood."""
    audit = result["audit"]
    audited = audit is not None and audit["n"] == n and audit["stopped_round"] == round_
    if audited and "reversed" in audit["outcome"]:
        return "reversed (audit)"
    later = [d for r in result["rounds"][round_ + 1 :] for d in r["decisions"] if d["n"] == n]
    if any(d["action"] == "resume" for d in later):
        return "reversed (resume)"
    if audited and "decided_again" in audit:
        again = decisions.stop_rule(audit["decided_again"])
        return "audit: stop confirmed" if again == "bound" else f"audit: stopped by {again}"
    return f"audit: {audit['outcome']}" if audited else "stood"


def bound_stops(scenario: Scenario, result: Mapping[str, Any], fits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every stop by the ceiling bound in a replay, with what the round's fit and the truth say of it."""
    ends = {arm["n"]: arm["compute_full"] for arm in result["arms"]}
    computes = checkpoint_computes(scenario)
    truth = scenario.true_optimum(computes)
    found = []
    audit = result["audit"]
    for round_, fit in zip(result["rounds"], fits, strict=True):
        seen = decisions.run_seen(fit, ends)
        curves = {int(curve["key"]["n"]): curve for curve in fit["curves"]}
        made = [d for d in round_["decisions"] if d["action"] == "stop"]
        if audit is not None:
            # The audit runs its arm on at the round that stopped it (the record says extend) and decides it again
            # `audit_rungs` later: the stop is the one the audit made, its second look is the stop's fate.
            second = audit["stopped_round"] + len(audit["rounds"])
            made = [d for d in made if not (d["n"] == audit["n"] and round_["round"] == second)]
            if round_["round"] == audit["stopped_round"]:
                made.append(audit["stopped_by"])
        for d in made:
            if decisions.stop_rule(d) != "bound":
                continue
            n = d["n"]
            last = float(curves[n]["range"][1])
            fitted = reward_fit_from_json(curves[n])
            found.append({
                "round": round_["round"], "n": n, "steps": d["numbers"]["steps"], "seen": seen[n],
                "upper": d["numbers"]["upper"], "frontier_low": d["numbers"]["frontier_low"],
                "past_fitted_mid": isinstance(fitted, RewardFit) and np.log10(last) > fitted.log10_c_mid,
                "past_true_mid": np.log10(last) > scenario.curves[n][1],
                "fate": fate(result, n, round_["round"]),
                "leads_beyond": bool(np.any(truth[computes > last] == n)),
            })  # fmt: skip
    return found


def main(seeds: Sequence[int], names: Sequence[str], with_counts: Sequence[bool], rules: Sequence[str]) -> None:
    start = time.time()
    print(f"rules {list(rules)}; seeds {list(seeds)}")
    totals: dict[str, Counter[str]] = {}
    for name in names:
        tally = totals.setdefault(name, Counter())
        for counts in with_counts:
            for seed in seeds:
                SEEN.clear()
                result = replay_draw(FAMILIES[name], seed, counts, ["isocompute"], rules=rules)["isocompute"]
                _, right, found = outcome(name, result["fits"])
                stops = bound_stops(FAMILIES[name], result, SEEN)
                print(f"\n{name} seed {seed} counts {'yes' if counts else 'no'}: spent {result['share_of_full_grid']:.1%}, "
                      f"{verdict(result['fits'])}, recovery {'-' if found is None else f'{found:.0%}'}, "
                      f"right {'yes' if right else 'no'}; bound stops {len(stops)}", flush=True)  # fmt: skip
                for s in stops:
                    print(f"  round {s['round']} n = {s['n']:>4} steps {s['steps']:>4} seen {s['seen']:>5.1%}  "
                          f"ceiling <= {s['upper']:.3f} < frontier {s['frontier_low']:.3f}  "
                          f"past fitted mid {'yes' if s['past_fitted_mid'] else 'no '}  "
                          f"past true mid {'yes' if s['past_true_mid'] else 'no '}  {s['fate']:22} "
                          f"{'LEADS in the truth beyond' if s['leads_beyond'] else ''}", flush=True)  # fmt: skip
                tally["draws"] += 1
                tally["right"] += right
                tally["share"] += result["share_of_full_grid"]
                tally["stops"] += len(stops)
                tally["reversed"] += sum(s["fate"].startswith("reversed") for s in stops)
                tally["leads_beyond"] += sum(s["leads_beyond"] for s in stops)
                tally["stood_leading"] += sum(s["leads_beyond"] and s["fate"].startswith(STOOD) for s in stops)
                tally["before_fitted_mid"] += sum(not s["past_fitted_mid"] for s in stops)
                tally["before_true_mid"] += sum(not s["past_true_mid"] for s in stops)
                tally["early"] += sum(s["seen"] < 0.25 for s in stops)
    print(f"\n{'family':24} {'draws':>5} {'right':>5} {'spent':>6} {'bound stops':>11} {'reversed':>8} "
          f"{'leads beyond':>12} {'stood, leads':>12} {'< fitted mid':>12} {'< true mid':>10} {'< 1/4 run':>9}")  # fmt: skip
    for name, t in [*totals.items(), ("all", sum(totals.values(), Counter()))]:
        print(f"{name:24} {t['draws']:>5} {t['right']:>5} {t['share'] / max(t['draws'], 1):>6.1%} {t['stops']:>11} "
              f"{t['reversed']:>8} {t['leads_beyond']:>12} {t['stood_leading']:>12} {t['before_fitted_mid']:>12} "
              f"{t['before_true_mid']:>10} {t['early']:>9}")  # fmt: skip
    print(f"\nwall time {time.time() - start:.0f} s")


if __name__ == "__main__":
    args, chosen = command_options(sys.argv[1:], ("--family", "--counts", "--rules"))
    main(
        tuple(int(s) for s in args) or (0, 1, 2),
        chosen["--family"] or POSITIVE,
        [c == "yes" for c in chosen["--counts"]] or [True, False],
        rules_option(chosen),
    )
