"""Does the law predict? The study refitted without its top compute, judged on what it left out.

A law of x*(C) is worth acting on only beyond the compute it was fitted on, which is exactly what a
single fit cannot show. So the top `decades` of measured compute are held out, every curve and the law
are refitted on the rest, and their predictions (the truncated curves extrapolated, by design here; the
truncated law, fitted as the full law is, to x* at every truncated compute point) are compared at the
held-out compute points with what the full data give there. Where the truncated data hold no law to fit
(too few points, or one value of x* throughout), the check says so: the law is then not checkable there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from isocompute.fits.curves import FitOptions, StudyFit, fit_curves, json_records
from isocompute.fits.forms import FitFailure, OptimumFit, fit_to_json, optimum_name
from isocompute.fits.frontier import distinct_computes
from isocompute.fits.law import LAW_MIN_POINTS, fit_leaders, shared_leaders
from isocompute.fits.leaders import column_leaders, leading


def holdout_check(table: pd.DataFrame, options: FitOptions, full: StudyFit, decades: float) -> dict[str, Any]:
    """Refit on compute up to max / 10**decades; errors of the predicted frontier reward and optimum above it."""
    compute = options.compute
    top = float(table[compute].max())
    cutoff = top / 10**decades
    held = full.optimum[full.optimum["compute"] > cutoff].reset_index(drop=True)
    kept = table[table[compute] <= cutoff]
    result: dict[str, Any] = {"decades": decades, "cutoff": cutoff, "checked_up_to": top}
    if held.empty or kept.empty:
        why = "no measured compute point above the cutoff" if held.empty else "no measured point below the cutoff"
        return {**result, "checkable": False, "reason": f"not checkable on this range: {why}"}
    truncated = fit_curves(
        kept, replace(options, extrapolate=True), held["compute"].to_numpy(), distinct_computes(kept[compute])
    )
    predicted = truncated.envelope.set_index("compute").reindex(held["compute"].to_numpy())
    points = pd.DataFrame({"compute": held["compute"], "reward_full": held["reward"]})
    points["reward_predicted"] = predicted["reward"].to_numpy()
    errors = (points["reward_predicted"] - points["reward_full"]).abs().dropna()
    result["reward_error"] = (
        {"mean_abs": float(errors.mean()), "max_abs": float(errors.max()), "points": len(errors)} if len(errors) else None
    )
    result["optimum"] = {}
    laws = {column: _truncated_law(truncated, options, column) for column in options.by}
    result["laws"] = {column: fit_to_json(law) for column, law in laws.items()}
    for column in options.by:
        points[f"{column}_full"] = held[column].to_numpy()
        law = laws[column]
        if isinstance(law, FitFailure):
            result["optimum"][column] = {"checkable": False, "reason": f"not checkable on this range: {law.reason}"}
            continue
        predicted_optimum = np.asarray(law(held["compute"].to_numpy()), dtype=float)
        points[f"{column}_predicted"] = predicted_optimum
        error = np.abs(np.log2(predicted_optimum / held[column].to_numpy(dtype=float)))
        result["optimum"][column] = {
            "checkable": True,
            "within_factor_2": float(np.mean(error <= 1.0)),
            "max_log2_error": float(error.max()),
            "points": len(error),
        }
    result["checkable"] = True
    result["points"] = json_records(points)
    return result


def _truncated_law(truncated: StudyFit, options: FitOptions, column: str) -> OptimumFit | FitFailure:
    """The truncated data's law of x* through their leaders, or why they hold none to check."""
    lead = leading(truncated.curve_rewards(), options.tolerance)
    leaders = column_leaders(truncated.keys, truncated.rewards, lead, list(options.by).index(column), column)
    material = leaders.material
    if material.sum() < LAW_MIN_POINTS:
        return FitFailure(
            "too_few_points", f"{int(material.sum())} material compute points below the cutoff, need {LAW_MIN_POINTS}"
        )
    if shared_leaders(leaders):
        return FitFailure("constant", f"one {optimum_name(column)} leads at every material point below the cutoff")
    return fit_leaders(truncated.optimum["compute"].to_numpy(), leaders)
