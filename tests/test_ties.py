"""Ties and reversals of the optimum: what counts as evidence for a law of x*(C)."""

import numpy as np

from isocompute.fitted_study import FitOptions
from isocompute.fitting import FitFailure, OptimumFit, fit_law
from isocompute.study_fits import fit_study
from isocompute.ties import bootstrap_ties, reversal_share

from known_truth import SCENARIOS, draw


def test_a_split_between_adjacent_n_is_a_tie_not_a_level() -> None:
    values = np.array([16, 8, 32, 32])
    chosen = np.array([[8, 8, 32, 32], [16, 8, 32, 32], [16, 8, 32, 64], [8, 8, 32, 32], [16, 8, 32, 32]], dtype=float)
    ties = bootstrap_ties(values, chosen, "n")
    assert ties.tie.tolist() == [True, False, False, False]
    assert ties.leaders[0] == [8, 16] and "8 in 40%, 16 in 60%" in ties.reasons[0]
    assert ties.reasons[1] is None


def test_a_lone_extreme_level_is_no_level() -> None:
    """At low compute the largest of many equal curves is often resolved by chance: one point is no plateau."""
    values = np.array([256, 64, 64, 64, 16, 16, 16])
    ties = bootstrap_ties(values, np.tile(values, (10, 1)).astype(float), "n")
    assert ties.tie.tolist() == [True] + [False] * 6 and "one point is no level" in ties.reasons[0]


def test_a_reversal_inside_the_noise_is_fitted_through_and_a_resolved_one_refuses() -> None:
    compute = np.geomspace(1e4, 1e7, 12)
    values = np.array([8, 8, 8, 16, 8, 16, 32, 64, 128, 256, 256, 256])
    refused = fit_law(compute, values, "n")
    assert isinstance(refused, FitFailure) and refused.kind == "not_monotone" and "16 -> 8" in refused.reason
    assert isinstance(fit_law(compute, values, "n", noise_reversals=[4]), OptimumFit)
    chosen = np.array([[16, 8], [8, 16], [16, 16], [16, 8], [8, 8]], dtype=float)
    assert reversal_share(chosen, 0, 1, +1) == 0.4
    assert reversal_share(None, 0, 1, +1) is None


def test_a_flat_metric_is_a_tie_everywhere_not_an_optimum() -> None:
    """worst@4 = 0 for every run at every compute (the extremely hard set): no n is optimal anywhere."""
    evals, _, _ = draw(SCENARIOS["shared_grid_constant"], 0)
    evals["worst@4"] = 0.0
    fit = fit_study(evals, FitOptions("worst@4", "compute_rollouts", ("n",)))
    law = fit["optimum"]["n"]
    assert not law["ok"] and law["kind"] == "unresolved" and law["points_tied"] == len(fit["optimum_points"])
    assert all(len(point["leaders"]["n"]) > 1 and point["tie_reason"]["n"] for point in fit["optimum_points"])
    assert fit["optimum_points"][-1]["leaders"]["n"] == [8, 16, 32, 64, 128, 256, 512, 1024]
