"""Ties of the optimum: where the replicas cannot tell the leaders apart, said as information."""

import numpy as np
from known_truth import SCENARIOS, draw

from isocompute.fits.curves import FitOptions
from isocompute.fits.fits_json import fit_study
from isocompute.fits.ties import bootstrap_ties


def test_a_split_between_adjacent_n_is_a_tie_not_a_level() -> None:
    values = np.array([16, 8, 32, 32])
    chosen = np.array([[8, 8, 32, 32], [16, 8, 32, 32], [16, 8, 32, 64], [8, 8, 32, 32], [16, 8, 32, 32]], dtype=float)
    ties = bootstrap_ties(values, chosen, "n")
    assert ties.tie.tolist() == [True, False, False, False]
    assert ties.leaders[0] == [8, 16] and "8 in 40%, 16 in 60%" in ties.reasons[0]
    assert ties.reasons[1] is None


def test_a_flat_metric_is_a_tie_everywhere_and_no_law() -> None:
    """worst@4 = 0 for every run at every compute (the extremely hard set): no n is optimal anywhere; the
    residual bootstrap of `isocompute fit` without counts says so."""
    evals, _, _ = draw(SCENARIOS["shared_grid_constant"], 0)
    evals["worst@4"] = 0.0
    fit = fit_study(evals, FitOptions("worst@4", "compute_rollouts", ("n",)), resamples=10)
    law = fit["optimum"]["n"]
    assert not law["ok"] and law["kind"] == "constant"
    assert fit["optimum_points"][-1]["shares"]["n"] == {"8": 1.0}
