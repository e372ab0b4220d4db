"""The tie part's stops against the truth: every `tie` stop of the rule, and whether the arm was truly tied.

`python tests/tie_truth.py [SEEDS...] [--family NAME]... [--counts yes|no]` replays the rule (`isocompute`, main's
`RULES`, as `tests/benchmark_peers.py` does; by default the families where the tie fires, seeds 0-2, with counts and
without, serially) and lists, per draw, its share of the grid, verdict and whether it is right, then every stop
by the tie part (`decisions.tied_to_frontier`, the audit's first look included, marked): its round, the arm n, its
steps and the share of its run it had seen (`decisions.run_seen`), the frontier's arm n_top, and from the truth
(`known_truth.true_reward`: the expected avg@4 on the draw's validation problems, the curve a fit of that
table estimates; for a family with several seeds per n, the mean of its seeds' drawn curves):

- at the arm's end compute (its full run) and at the compute it had reached at the stop, its class: *led* where
  its true reward exceeds the frontier's arm's by more than `fits.tolerance` (the arm would have led the frontier),
  else *tied* where it is within the tolerance of the truth's best there (over every n), else *behind*;
- whether the forecast's intervals (the `own` mode's 90 % interval of a new evaluation, as the tie read them)
  covered the arm's and the frontier's arm's true reward at the compute the forecast was made for
  (min of the two arms' ends: the arm's end unless the frontier's arm ends earlier).

A summary per family and in all follows. A tie stop is *wrong* where the arm is not tied at its end: *behind*
(censored where it should have been settled: costs evidence, makes no false law) or *led* (an arm that would
have owned the frontier beyond its stop is cut: costs the high-compute frontier). The question is
docs/log/adaptive-peers.md's "The tie part's stops against the truth": the tie reads its forecast from a quarter of
a run (`decisions.TIE_FROM`), where the forecast's intervals were never calibrated (docs/log/adaptive-extrapolation.md
calibrated them from half a run).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchmark_peers import FAMILIES, NEGATIVE, POSITIVE, command_options, outcome, replay_draw, verdict
from known_truth import Scenario, true_reward

from isocompute.adaptive import decisions
from isocompute.fits.leaders import DEFAULT_TOLERANCE

TIED = [*NEGATIVE, *POSITIVE]
CLASSES = ("tied", "behind", "led")


def classify(
    reward: Any, ns: Sequence[int], n: int, n_top: int, compute: float, tolerance: float
) -> tuple[str, float, float]:
    """Arm n's class at `compute` in the truth (the module docstring: led, tied, behind), its true reward minus the
    frontier's arm's, and minus the truth's best over every n."""
    values = {m: float(reward(m, compute)[0]) for m in ns}
    lead, gap = values[n] - values[n_top], values[n] - max(values.values())
    return ("led" if lead > tolerance else "tied" if gap >= -tolerance else "behind"), lead, gap


def tie_stops(scenario: Scenario, seed: int, result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every tie stop of a replay (the audit's first look included) with what the truth says of it."""
    ends = {arm["n"]: arm["compute_full"] for arm in result["arms"]}
    reward = true_reward(scenario, seed)
    ns = sorted(scenario.curves)
    audit = result["audit"]
    found = []
    for round_ in result["rounds"]:
        made = [(d, "") for d in round_["decisions"] if d["action"] == "stop"]
        if audit is not None:
            # The audit's arm runs on past the stop the record names `extend` (its stop is `stopped_by`), and is
            # decided again `audit_rungs` later: that second look, a stop, is a stop of its own.
            second = audit["stopped_round"] + len(audit["rounds"])
            made = [(d, "audit's second look" if d["n"] == audit["n"] and round_["round"] == second else "")
                    for d, _ in made]  # fmt: skip
            if round_["round"] == audit["stopped_round"]:
                made.append((audit["stopped_by"], f"audit's first look, then {audit['outcome']}"))
        for d, note in made:
            if decisions.stop_rule(d) != "tie":
                continue
            n, n_top, numbers = d["n"], int(round_["n_top"]), d["numbers"]
            at = min(ends[n], ends[n_top])
            stop_compute = float(numbers["steps"] * scenario.b_problem(n) * n)
            end_class, end_lead, end_gap = classify(reward, ns, n, n_top, ends[n], DEFAULT_TOLERANCE)
            stop_class, stop_lead, _ = classify(reward, ns, n, n_top, stop_compute, DEFAULT_TOLERANCE)
            true_arm, true_top = float(reward(n, at)[0]), float(reward(n_top, at)[0])
            (low, high), (top_low, top_high) = numbers["forecast"], numbers["frontier_forecast"]
            found.append({
                "round": round_["round"], "n": n, "n_top": n_top, "steps": numbers["steps"], "seen": numbers["seen"],
                "end": ends[n], "at": at, "end_class": end_class, "end_lead": end_lead, "end_gap": end_gap,
                "stop_class": stop_class, "stop_lead": stop_lead, "true_arm": true_arm, "forecast": (low, high),
                "covered": low <= true_arm <= high, "true_top": true_top, "frontier_forecast": (top_low, top_high),
                "top_covered": top_low <= true_top <= top_high, "note": note,
            })  # fmt: skip
    return found


def main(seeds: Sequence[int], names: Sequence[str], with_counts: Sequence[bool]) -> None:
    start = time.time()
    print(
        f"rules {list(decisions.RULES)}; TIE_FROM {decisions.TIE_FROM}; tolerance {DEFAULT_TOLERANCE}; seeds {list(seeds)}"
    )
    totals: dict[str, Counter[str]] = {}
    for name in names:
        tally = totals.setdefault(name, Counter())
        for counts in with_counts:
            for seed in seeds:
                began = time.time()
                result = replay_draw(FAMILIES[name], seed, counts, ["isocompute"])["isocompute"]
                _, right, _ = outcome(name, result["fits"])
                stops = tie_stops(FAMILIES[name], seed, result)
                print(f"\n{name} seed {seed} counts {'yes' if counts else 'no'}: spent {result['share_of_full_grid']:.1%}, "
                      f"{verdict(result['fits'])}, right {'yes' if right else 'no'}; tie stops {len(stops)} "
                      f"({time.time() - began:.0f} s)", flush=True)  # fmt: skip
                for s in stops:
                    print(f"  round {s['round']} n = {s['n']:>4} (n_top {s['n_top']:>4}) steps {s['steps']:>4} "
                          f"seen {s['seen']:>5.1%} | end {s['end_class']:6} (vs n_top {s['end_lead']:+.4f}, "
                          f"vs best {s['end_gap']:+.4f}) | stop {s['stop_class']:6} ({s['stop_lead']:+.4f}) | "
                          f"C {s['at']:.3g}: arm {s['true_arm']:.3f} in {s['forecast'][0]:.3f}-{s['forecast'][1]:.3f} "
                          f"{'yes' if s['covered'] else 'NO '}, n_top {s['true_top']:.3f} in "
                          f"{s['frontier_forecast'][0]:.3f}-{s['frontier_forecast'][1]:.3f} "
                          f"{'yes' if s['top_covered'] else 'NO '}{'  ' + s['note'] if s['note'] else ''}",
                          flush=True)  # fmt: skip
                tally["draws"] += 1
                tally["right"] += right
                tally["share"] += result["share_of_full_grid"]
                tally["with_ties"] += bool(stops)
                tally["stops"] += len(stops)
                tally["audit"] += sum(s["note"].startswith("audit's first") for s in stops)
                for c in CLASSES:
                    tally[f"end_{c}"] += sum(s["end_class"] == c for s in stops)
                    tally[f"stop_{c}"] += sum(s["stop_class"] == c for s in stops)
                tally["covered"] += sum(s["covered"] for s in stops)
                tally["top_covered"] += sum(s["top_covered"] for s in stops)
    print(f"\n{'family':24} {'draws':>5} {'right':>5} {'spent':>6} {'w/ ties':>7} {'ties':>5} {'audit':>5} | at the end: "
          f"{'tied':>5} {'behind':>6} {'led':>5} | at the stop: {'tied':>5} {'behind':>6} {'led':>5} | covered: "
          f"{'arm':>5} {'n_top':>5}")  # fmt: skip
    for name, t in [*totals.items(), ("all", sum(totals.values(), Counter()))]:
        k = max(t["stops"], 1)
        print(f"{name:24} {t['draws']:>5} {t['right']:>5} {t['share'] / max(t['draws'], 1):>6.1%} {t['with_ties']:>7} "
              f"{t['stops']:>5} {t['audit']:>5} | {'':11} "
              + " ".join(f"{t[f'end_{c}'] / k:>{w}.0%}" for c, w in zip(CLASSES, (5, 6, 5), strict=True))
              + f" | {'':12} "
              + " ".join(f"{t[f'stop_{c}'] / k:>{w}.0%}" for c, w in zip(CLASSES, (5, 6, 5), strict=True))
              + f" | {'':8} {t['covered'] / k:>5.0%} {t['top_covered'] / k:>5.0%}")  # fmt: skip
    print(f"\nwall time {time.time() - start:.0f} s")


if __name__ == "__main__":
    args, chosen = command_options(sys.argv[1:], ("--family", "--counts"))
    main(
        tuple(int(s) for s in args) or (0, 1, 2),
        chosen["--family"] or TIED,
        [c == "yes" for c in chosen["--counts"]] or [True, False],
    )
