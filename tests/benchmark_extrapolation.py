"""How well an arm's future reward is predicted from the part of its run seen, and whether its intervals cover
the truth: the calibration behind the adaptive rule's use of `adaptive.extrapolation`.

`python tests/benchmark_extrapolation.py [SEEDS...] [--family NAME]... [--mode shared|own|checked]...` draws each
known-truth family (tests/known_truth.py's close, equal-step and dense tables, prior_truth.py's realistic ones)
on each seed, cuts every arm at a fraction of its run (`FRACTIONS`, in linear compute: 1/64 is the arm's
first 64th of rollouts, six doublings before its end, as a rung of the rule with rung factor 2 leaves it),
forecasts its reward at every checkpoint beyond the cut (`forecast_arms`, the slope shared with the other arms
cut at the same fraction, or each arm's own; `checked`: each arm's own, the curve's interval widened by the arm's
earlier miss, setting 3 of the log), and compares with the truth of that table
(`known_truth.expected_reward`: the mean of its problems' solve probabilities, the curve the fit estimates).

Per family, mode and fraction it prints the arms forecast and refused, the median absolute error at the arm's
last checkpoint, the share of the unseen checkpoints whose truth lies inside the 90 % interval (two-sided
coverage), the share of arms whose truth at their last checkpoint lies at or under the interval's upper edge
(what the rule relies on: nominal 95 %), and the interval's median width there; then the same pooled over
families with the worst family's figures, and whether each fraction is calibrated by the rule fixed in
docs/log/adaptive-extrapolation.md before the first run (`CALIBRATED`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from known_truth import CLOSE, K, Scenario, draw, expected_reward
from prior_truth import BOOTSTRAP, REALISTIC

from isocompute.adaptive.extrapolation import LEVEL, Forecast, forecast_arms
from isocompute.adaptive.rungs import CAP_SLACK
from isocompute.fits.curves import curve_points
from isocompute.sampling.metrics import summarize_counts

FAMILIES = {
    name: {**CLOSE, **REALISTIC}[name]
    for name in (
        "close_shared_saturating", "close_power2_rising", "close_falling", "close_not_monotone", "close_constant",
        "close_flat", "equal_steps_rising", "equal_steps_constant", "dense_equal_steps", "dense_flat",
        "realistic_slow", "realistic_late",
    )
}  # fmt: skip
FRACTIONS = (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2)
# The decision rule, fixed before the first run (docs/log/adaptive-extrapolation.md): a fraction is calibrated
# for a mode where, on every family with at least MIN_ARMS arm-draws forecast there, the truth at the arm's last
# checkpoint lies at or under the interval's upper edge in >= UPPER_HELD of them (nominal 95 %), and the
# two-sided 90 % interval covers >= COVERAGE of the unseen checkpoints' truths (nominal 90 %).
UPPER_HELD = 0.9
COVERAGE = 0.85
MIN_ARMS = 10


def cut_draw(scenario: Scenario, seed: int, fraction: float, mode: str) -> list[dict[str, Any]]:
    """Every arm of one draw cut at `fraction` of its run, forecast beyond, and scored against the truth."""
    evals, _, base = draw(scenario, seed)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    table = curve_points(evals, "avg@4", "compute_rollouts", ("n",))
    end = table.groupby("n")["compute_rollouts"].max()
    seen = table[table["compute_rollouts"] <= fraction * table["n"].map(end) * CAP_SLACK]
    unseen = table.drop(seen.index)
    at = {int(n): group["compute_rollouts"].to_numpy() for n, group in unseen.groupby("n")}
    forecasts = forecast_arms(seen, "avg@4", "compute_rollouts", at, base_reward, BOOTSTRAP, seed, mode == "shared",
                              mode == "checked")  # fmt: skip
    rows = []
    for n, result in forecasts.items():
        if not isinstance(result, Forecast):
            rows.append({"n": n, "refused": result.kind})
            continue
        truth = expected_reward(scenario, seed, n, result.compute)
        rows.append({
            "n": n, "refused": None, "error": float(result.reward[-1] - truth[-1]),
            "covered": ((result.low <= truth) & (truth <= result.high)).tolist(),
            "upper_held": bool(truth[-1] <= result.high[-1]), "width": float(result.high[-1] - result.low[-1]),
        })  # fmt: skip
    return rows


def figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Arms forecast and refused, median |error| at the last checkpoint, coverage, upper edge held, width."""
    made = [r for r in rows if r["refused"] is None]
    covered = [c for r in made for c in r["covered"]]
    return {
        "forecast": len(made),
        "refused": len(rows) - len(made),
        "error": float(np.median([abs(r["error"]) for r in made])) if made else np.nan,
        "coverage": float(np.mean(covered)) if covered else np.nan,
        "upper_held": float(np.mean([r["upper_held"] for r in made])) if made else np.nan,
        "width": float(np.median([r["width"] for r in made])) if made else np.nan,
    }


def calibrated(per_family: Mapping[str, Mapping[str, Any]]) -> bool:
    """The decision rule: on every family with `MIN_ARMS` forecasts, the upper edge held and the coverage."""
    judged = [f for f in per_family.values() if f["forecast"] >= MIN_ARMS]
    return bool(judged) and all(f["upper_held"] >= UPPER_HELD and f["coverage"] >= COVERAGE for f in judged)


def line(label: str, f: Mapping[str, Any]) -> str:
    return (f"{label} {f['forecast']:>5} {f['refused']:>5} {f['error']:>7.3f} {f['coverage']:>8.0%} "
            f"{f['upper_held']:>7.0%} {f['width']:>6.3f}")  # fmt: skip


def main(seeds: Sequence[int], names: Sequence[str], modes: Sequence[str]) -> None:
    start = time.time()
    print(f"interval {LEVEL:.0%}, {BOOTSTRAP} residual-bootstrap refits; seeds {list(seeds)}; fractions of each arm's "
          f"run in linear compute; truth: the table's expected avg@4")  # fmt: skip
    header = f"{'mode':6} {'family':24} {'seen':>5} {'arms':>5} {'refused':>5} {'|err|':>7} {'coverage':>8} {'upper':>7} {'width':>6}"
    results: dict[tuple[str, str, float], dict[str, Any]] = {}
    print(header)
    for mode in modes:
        for name in names:
            for fraction in FRACTIONS:
                rows = [r for seed in seeds for r in cut_draw(FAMILIES[name], seed, fraction, mode)]
                results[(mode, name, fraction)] = figures(rows)
                print(line(f"{mode:6} {name:24} 1/{round(1 / fraction):<3}", results[(mode, name, fraction)]), flush=True)
    print(f"\n{'mode':6} {'pooled over families':24} {'seen':>5} {'arms':>5} {'refused':>5} {'|err|':>7} {'coverage':>8} "
          f"{'upper':>7} {'width':>6}   worst family: coverage, upper held; calibrated")  # fmt: skip
    for mode in modes:
        for fraction in FRACTIONS:
            per_family = {name: results[(mode, name, fraction)] for name in names}
            made = [f for f in per_family.values() if f["forecast"]]
            pooled = {
                "forecast": sum(f["forecast"] for f in made),
                "refused": sum(f["refused"] for f in per_family.values()),
                **{key: float(np.average([f[key] for f in made], weights=[f["forecast"] for f in made]))
                   for key in ("error", "coverage", "upper_held", "width")},
            } if made else {"forecast": 0, "refused": 0, "error": np.nan, "coverage": np.nan, "upper_held": np.nan, "width": np.nan}  # fmt: skip
            judged = {name: f for name, f in per_family.items() if f["forecast"] >= MIN_ARMS}
            worst_cover = min(judged, key=lambda k: judged[k]["coverage"]) if judged else None
            worst_upper = min(judged, key=lambda k: judged[k]["upper_held"]) if judged else None
            worst = (f"{judged[worst_cover]['coverage']:.0%} ({worst_cover}), {judged[worst_upper]['upper_held']:.0%} "
                     f"({worst_upper})") if judged else "-"  # fmt: skip
            print(line(f"{mode:6} {'':24} 1/{round(1 / fraction):<3}", pooled) +
                  f"   {worst}; {'yes' if calibrated(per_family) else 'no'}")  # fmt: skip
    print(f"\nwall time {time.time() - start:.0f} s")


if __name__ == "__main__":
    # python tests/benchmark_extrapolation.py [SEEDS...] [--family NAME]... [--mode shared|own|checked]...
    args = sys.argv[1:]
    chosen: dict[str, list[str]] = {"--family": [], "--mode": []}
    while any(a in chosen for a in args):
        at = next(i for i, a in enumerate(args) if a in chosen)
        chosen[args[at]].append(args[at + 1])
        del args[at : at + 2]
    main(tuple(int(s) for s in args) or tuple(range(5)), chosen["--family"] or list(FAMILIES),
         chosen["--mode"] or ["shared", "own"])  # fmt: skip
