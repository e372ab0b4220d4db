"""The prescription: for a budget C, the n, B_problem, M and learning rate the fitted study supports.

Where the study identified a law of x*(C) (x = n, and B_problem where the study varies it), x* comes from
the law, with the bootstrap's 95 % interval, and the prescription says how far the law was checked on
held-out compute. Where no law was identified, the data still answer inside the measured range: the
leaders at the nearest compute point (every value within a material margin of the best,
`isocompute.fits.leaders`), named, and one of them picked by `pick_leader`'s stated rule. Beyond the
measured range without a law there is nothing to extrapolate, and the answer is a refusal that says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from isocompute.errors import IsoComputeError
from isocompute.fits.forms import FitFailure, optimum_curve, optimum_fit_from_json
from isocompute.study.grid import learning_rate

NAMES = {"n": "n*", "b_problem": "B_problem*"}


class NoRecommendation(IsoComputeError, ValueError):
    """A budget the study's fits cannot answer; the message says why."""


def _measured_range(fit: Mapping[str, Any]) -> tuple[float, float]:
    measured = pd.DataFrame(fit["measured"])[fit["compute"]]
    return float(measured[measured > 0].min()), float(measured.max())


def _optimum_at(fit: Mapping[str, Any], column: str, compute: float) -> dict[str, Any]:
    """x* at `compute`: from the law, or measured inside the range, or a `NoRecommendation`."""
    entry = fit["optimum"][column]
    law = optimum_fit_from_json(entry)
    low, high = _measured_range(fit)
    if not isinstance(law, FitFailure):
        partial = entry.get("identified") not in (None, "identified")
        if partial and not low <= compute <= high:
            raise NoRecommendation(
                f"C = {compute:.4g} lies outside the measured range [{low:.4g}, {high:.4g}] and the law of "
                f"{NAMES.get(column, column)} is partial, so it predicts only inside: {entry['reason']}"
            )
        samples = entry.get("samples")
        draws = [2 ** optimum_curve(math.log10(compute), *sample) for sample in samples] if samples else []
        kind = {"step": " (a step)", "plateau_not_reached": " (plateau not reached)"}.get(entry.get("identified"), "")
        return {
            "value": float(law(compute)),
            "interval": [float(v) for v in np.percentile(draws, [2.5, 97.5])] if draws else None,
            "share": None,
            "source": f"law of {NAMES.get(column, column)}{kind}",
        }
    points = pd.DataFrame(fit["optimum_points"])
    if points.empty:
        raise NoRecommendation(f"no frontier to read {NAMES.get(column, column)} from: {law.reason}")
    if not low <= compute <= high:
        raise NoRecommendation(
            f"C = {compute:.4g} lies outside the measured range [{low:.4g}, {high:.4g}] and the data identify "
            f"no law of {NAMES.get(column, column)} to extrapolate ({law.reason})"
        )
    nearest = points.iloc[(np.log(points["compute"]) - math.log(compute)).abs().argmin()]
    leaders = nearest.get("leaders")
    named = list(leaders[column]) if isinstance(leaders, Mapping) and leaders.get(column) else [int(nearest[column])]
    value = pick_leader(column, named)
    shares = nearest.get("shares")
    share = shares[column].get(str(value), 0.0) if isinstance(shares, Mapping) else None
    several = (
        f"; {', '.join(map(str, named))} lead there (within a material margin of the best), {PICK[column]}"
        if len(named) > 1
        else ""
    )
    return {
        "value": float(value),
        "interval": None,
        "share": share,
        "leaders": named,
        "source": f"measured frontier at C = {nearest['compute']:.4g} (no law: {law.reason}){several}",
    }


# Which of several leaders to run, and why: they are level by what the data and the tolerance say.
PICK = {
    "b_problem": "the largest B_problem is picked (the paper's recipe: B_problem is a stability constraint)",
    "n": "the largest n is picked (the same reward in fewer sequential steps)",
}


def pick_leader(column: str, leaders: list[int]) -> int:
    """The leader `recommend` prescribes where several lead: the largest, by `PICK`'s reasons."""
    return max(leaders)


def power_of_two(value: float) -> int:
    """The grid's values are powers of two: round in log2."""
    return int(2 ** round(math.log2(max(value, 1.0))))


def holdout_summary(fit: Mapping[str, Any], column: str = "n") -> str:
    """How far the law of x* was checked on held-out compute, in one sentence."""
    check = fit.get("holdout")
    if not check:
        return "the law was not checked on held-out compute (fits.holdout_decades = 0)"
    if not check.get("checkable"):
        return check["reason"]
    optimum = check["optimum"].get(column, {})
    reward = check.get("reward_error")
    text = f"fitted without the top {check['decades']:g} decades of compute and checked up to C = {check['checked_up_to']:.3g}: "
    if optimum.get("checkable"):
        text += f"{NAMES.get(column, column)} within a factor 2 at {optimum['within_factor_2']:.0%} of {optimum['points']} points"
    else:
        text += optimum.get("reason", f"{NAMES.get(column, column)} not checked")
    if reward:
        text += f"; frontier reward off by {reward['mean_abs']:.3g} on average (at most {reward['max_abs']:.3g})"
    return text


def recommend(fits_file: Mapping[str, Any], compute: float, metric: str | None = None) -> dict[str, Any]:
    """The allocation of `compute` rollouts that the study's fits support; `NoRecommendation` if none."""
    metric = metric or fits_file["headline"]["metric"]
    fit = fits_file["fits"][metric]["compute_rollouts"]
    low, high = _measured_range(fit)
    n = _optimum_at(fit, "n", compute)
    fixed = fits_file["study"]["fixed"]
    if "b_problem" in fit["by"]:
        b = _optimum_at(fit, "b_problem", compute)
    else:
        b = {"value": float(fixed["b_problem"]), "interval": None, "share": None, "source": "held fixed by the study"}
    n_value, b_problem = power_of_two(n["value"]), power_of_two(b["value"])
    if "b_problem" in fit["by"] and fixed.get("batch"):
        # At fixed B the pair is one choice: B_problem decides (the larger for stability), n = B / B_problem.
        n_value = int(fixed["batch"]) // b_problem
    batch = b_problem * n_value
    # fits.json files written before the key was named for what it holds call it "recipe".
    rule = fits_file["learning_rate"] if "learning_rate" in fits_file else fits_file["recipe"]
    warnings = []
    if not low <= compute <= high:
        warnings.append(
            f"C = {compute:.4g} lies outside the measured range [{low:.4g}, {high:.4g}] rollouts: "
            f"this is an extrapolation of the fitted law"
        )
    return {
        "compute": compute,
        "metric": metric,
        "n": n_value,
        "n_fitted": n["value"],
        "n_interval": n["interval"],
        "n_share": n["share"],
        "n_source": n["source"],
        "n_leaders": n.get("leaders"),
        "b_problem": b_problem,
        "b_problem_fitted": b["value"],
        "b_problem_interval": b["interval"],
        "b_problem_share": b["share"],
        "b_problem_source": b["source"],
        "b_problem_leaders": b.get("leaders"),
        "steps": math.ceil(compute / batch),
        "batch": batch,
        "learning_rate": learning_rate(batch, rule["lr_base"], rule["lr_batch_ref"], rule["lr_rule"]),
        "measured_range": [low, high],
        "checked": holdout_summary(fit),
        "warnings": warnings,
    }


def recommend_or_reason(fits_file: Mapping[str, Any], compute: float, metric: str | None = None) -> dict[str, Any]:
    """`recommend`, or the reason no recommendation can be made."""
    try:
        return recommend(fits_file, compute, metric)
    except NoRecommendation as error:
        return {"compute": compute, "metric": metric or fits_file["headline"]["metric"], "error": str(error)}


def describe_recommendation(advice: Mapping[str, Any]) -> str:
    """A recommendation as a few plain lines."""
    if "error" in advice:
        return f"Budget C = {advice['compute']:.6g} rollouts: no recommendation ({advice['error']})"

    def support(prefix: str) -> str:
        interval, share = advice[f"{prefix}_interval"], advice[f"{prefix}_share"]
        if interval:
            return f"; 95 % interval {interval[0]:.3g} to {interval[1]:.3g}"
        if share is not None:
            return f"; chosen by {share:.0%} of bootstrap replicas"
        return ""

    lines = [
        f"Budget C = {advice['compute']:.6g} rollouts, optimizing {advice['metric']}:",
        f"  n = {advice['n']}  ({advice['n_source']}: {advice['n_fitted']:.3g}{support('n')})",
        f"  B_problem = {advice['b_problem']}  ({advice['b_problem_source']}: {advice['b_problem_fitted']:.3g}"
        f"{support('b_problem')})",
        f"  M = C / (B_problem * n) = {advice['steps']} steps of B = {advice['batch']} rollouts",
        f"  learning rate = {advice['learning_rate']:.3g}",
        f"  checked: {advice['checked']}",
    ]
    lines += [f"  WARNING: {warning}" for warning in advice["warnings"]]
    return "\n".join(lines)
