"""The prescription: for a budget C, the n, B_problem, M and learning rate the fitted study recommends.

n* (and B_problem* where the study varies it) comes from the fitted sigmoid of log2 x* in log10 C, with the
bootstrap's 95 % interval; where that sigmoid could not be fitted, from the frontier at the nearest measured
compute. A budget outside the measured range is an extrapolation and is reported as one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fitting import FitFailure, optimum_curve, optimum_fit_from_json
from isocompute.grid import learning_rate


def _optimum_at(fit: Mapping[str, Any], column: str, compute: float) -> tuple[float, list[float] | None, str]:
    """The fitted optimum of `column` at `compute`, its interval, and where the value came from."""
    model = optimum_fit_from_json(fit["optimum"][column])
    if not isinstance(model, FitFailure):
        value = float(model(compute))
        samples = fit["optimum"][column].get("samples")
        interval = None
        if samples:
            draws = [2 ** optimum_curve(math.log10(compute), *sample) for sample in samples]
            interval = [float(v) for v in np.percentile(draws, [2.5, 97.5])]
        return value, interval, "sigmoid fit"
    frontier = pd.DataFrame(fit["frontier"])
    if frontier.empty:
        raise ValueError(f"no frontier to recommend {column} from: {model.reason}")
    nearest = frontier.iloc[(np.log(frontier["compute"]) - math.log(compute)).abs().argmin()]
    return float(nearest[column]), None, f"frontier at C = {nearest['compute']:.4g} ({model.reason})"


def power_of_two(value: float) -> int:
    """The grid's values are powers of two: round in log2."""
    return int(2 ** round(math.log2(max(value, 1.0))))


def recommend(fits_file: Mapping[str, Any], compute: float, metric: str | None = None) -> dict[str, Any]:
    """The allocation of `compute` rollouts that the study's fits prescribe."""
    headline = fits_file["headline"]
    metric = metric or headline["metric"]
    fit = fits_file["fits"][metric]["compute_rollouts"]
    measured = pd.DataFrame(fit["measured"])["compute_rollouts"]
    low, high = float(measured[measured > 0].min()), float(measured.max())
    n_value, n_interval, n_source = _optimum_at(fit, "n", compute)
    n = power_of_two(n_value)
    fixed = fits_file["study"]["fixed"]
    if "b_problem" in fit["by"]:
        b_value, b_interval, b_source = _optimum_at(fit, "b_problem", compute)
        b_problem = power_of_two(b_value)
    else:
        b_value, b_interval, b_source = float(fixed["b_problem"]), None, "held fixed by the study"
        b_problem = int(fixed["b_problem"])
    batch = b_problem * n
    recipe = fits_file["recipe"]
    warnings = []
    if not low <= compute <= high:
        warnings.append(
            f"C = {compute:.4g} lies outside the measured range [{low:.4g}, {high:.4g}] rollouts: "
            f"this is an extrapolation of the fitted sigmoid"
        )
    return {
        "compute": compute,
        "metric": metric,
        "n": n,
        "n_fitted": n_value,
        "n_interval": n_interval,
        "n_source": n_source,
        "b_problem": b_problem,
        "b_problem_fitted": b_value,
        "b_problem_interval": b_interval,
        "b_problem_source": b_source,
        "steps": math.ceil(compute / batch),
        "batch": batch,
        "learning_rate": learning_rate(batch, recipe["lr_base"], recipe["lr_batch_ref"]),
        "measured_range": [low, high],
        "warnings": warnings,
    }


def recommend_or_reason(fits_file: Mapping[str, Any], compute: float, metric: str | None = None) -> dict[str, Any]:
    """`recommend`, or the reason no recommendation can be made (no curve of the study could be fitted)."""
    try:
        return recommend(fits_file, compute, metric)
    except ValueError as error:
        return {"compute": compute, "metric": metric or fits_file["headline"]["metric"], "error": str(error)}


def describe(advice: Mapping[str, Any]) -> str:
    """A recommendation as a few plain lines."""
    if "error" in advice:
        return f"Budget C = {advice['compute']:.6g} rollouts: no recommendation ({advice['error']})"

    def interval(values: list[float] | None) -> str:
        return f" (95 % interval {values[0]:.3g} to {values[1]:.3g})" if values else ""

    lines = [
        f"Budget C = {advice['compute']:.6g} rollouts, optimizing {advice['metric']}:",
        f"  n = {advice['n']}  (fitted n* = {advice['n_fitted']:.3g}{interval(advice['n_interval'])}; {advice['n_source']})",
        f"  B_problem = {advice['b_problem']}  (fitted {advice['b_problem_fitted']:.3g}"
        f"{interval(advice['b_problem_interval'])}; {advice['b_problem_source']})",
        f"  M = C / (B_problem * n) = {advice['steps']} steps of B = {advice['batch']} rollouts",
        f"  learning rate = {advice['learning_rate']:.3g} (square-root rule)",
    ]
    lines += [f"  WARNING: {warning}" for warning in advice["warnings"]]
    return "\n".join(lines)
