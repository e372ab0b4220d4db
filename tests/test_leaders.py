"""The leaders at each compute point: a value is behind only by a margin that is material (over the
tolerance) and resolved (in the replicas, and beyond the measured noise near the anchor)."""

import numpy as np
from known_truth import SCENARIOS, draw

from isocompute.fits.curves import FitOptions
from isocompute.fits.leaders import ALL_LEAD, MATERIAL, SINGLE, CurveRewards, column_leaders, leading, replica_leading
from isocompute.fits.study_fit import fit_study

KEYS = [(8,), (16,), (32,)]


def rewards_of(rows: list[list[float]], anchors: tuple = (0.3, 0.3, 0.3), noise: tuple = (0.0, 0.0, 0.0)) -> CurveRewards:
    return CurveRewards(KEYS, np.array(rows, dtype=float), np.array(anchors, dtype=float), np.array(noise, dtype=float))


def test_a_margin_under_the_tolerance_is_no_margin() -> None:
    point = rewards_of([[0.50, 0.50], [0.495, 0.47], [0.40, 0.40]])
    lead = leading(point, tolerance=0.01)
    assert lead.tolist() == [[True, True], [True, False], [False, False]]
    assert leading(point, tolerance=0.0).tolist() == [[True, True], [False, False], [False, False]]


def test_the_replicas_must_resolve_a_margin() -> None:
    """16 is 0.03 behind in the point estimate, but only 6 of 10 replicas put it more than the tolerance
    behind: it leads. 32 is behind in every replica: it does not."""
    point = rewards_of([[0.50], [0.47], [0.40]])
    replicas = [np.array([[0.50], [0.47], [0.40]])] * 6 + [np.array([[0.50], [0.495], [0.40]])] * 4
    assert leading(point, 0.01, replicas)[:, 0].tolist() == [True, True, False]
    replicas = [np.array([[0.50], [0.47], [0.40]])] * 9 + [np.array([[0.50], [0.495], [0.40]])]
    assert leading(point, 0.01, replicas)[:, 0].tolist() == [True, False, False]


def test_near_the_anchor_the_measured_noise_decides_not_the_fitted_shapes() -> None:
    """Every curve still within one point's noise (0.02) of its base value: a 0.015 margin that every replica
    reproduces (the replicas share the sigmoids' shapes there) is no evidence."""
    point = rewards_of([[0.315], [0.300], [0.31]], noise=(0.02, 0.02, 0.02))
    replicas = [point.rewards.copy() for _ in range(10)]
    assert leading(point, 0.01, replicas)[:, 0].all()
    risen = rewards_of([[0.40], [0.385], [0.393]], noise=(0.02, 0.02, 0.02))
    assert leading(risen, 0.01, [risen.rewards.copy()] * 10)[:, 0].tolist() == [True, False, True]


def test_a_point_is_evidence_only_where_some_value_is_behind() -> None:
    rewards = np.array([[0.5, 0.5, np.nan], [0.5, 0.4, 0.6], [np.nan, 0.3, np.nan]])
    lead = replica_leading(rewards, 0.01)
    leaders = column_leaders(KEYS, rewards, lead, 0, "n")
    assert leaders.status == [ALL_LEAD, MATERIAL, SINGLE]
    assert leaders.leaders == [[8, 16], [8], [16]] and leaders.values.tolist() == [8, 8, 16]
    assert "no competitors" in leaders.reasons[2] and "every n measured here (8, 16) leads" in leaders.reasons[0]
    assert leaders.material.tolist() == [False, True, False]


def test_a_flat_metric_has_no_evidence_and_no_law() -> None:
    """worst@4 = 0 for every run at every compute (the extremely hard set): every n leads everywhere, so no
    point is evidence of n*; the residual bootstrap of `isocompute fit` without counts says so."""
    evals, _, _ = draw(SCENARIOS["shared_grid_constant"], 0)
    evals["worst@4"] = 0.0
    fit = fit_study(evals, FitOptions("worst@4", "compute_rollouts", ("n",)), resamples=10)
    law = fit["optimum"]["n"]
    assert not law["ok"] and law["kind"] == "no_evidence" and law["evidence"]["material"] == 0
    assert fit["optimum_points"][-1]["shares"]["n"] == {"8": 1.0}
    assert all(p["status"]["n"] == ALL_LEAD for p in fit["optimum_points"])


def _fits_file(points: list[dict], by: list[str], fixed: dict) -> dict:
    """A fits JSON with no law and the given optimum points, as `recommend` reads it."""
    fit = {
        "compute": "compute_rollouts", "by": by,
        "measured": [{"compute_rollouts": 1e3}, {"compute_rollouts": 1e6}],
        "optimum": {column: {"ok": False, "kind": "not_resolved", "reason": "not resolved"} for column in by},
        "optimum_points": points, "holdout": None,
    }  # fmt: skip
    return {"headline": {"metric": "avg@4", "compute": "compute_rollouts"}, "study": {"fixed": fixed},
            "learning_rate": {"lr_rule": "sqrt", "lr_base": 1e-6, "lr_batch_ref": 1024},
            "fits": {"avg@4": {"compute_rollouts": fit}}}  # fmt: skip


def test_recommend_names_the_leaders_and_picks_by_its_stated_rule() -> None:
    from isocompute.fits.recommend import recommend

    point = {"compute": 1e5, "n": 16, "leaders": {"n": [8, 16, 32]}, "status": {"n": "material"}}
    advice = recommend(_fits_file([point], ["n"], {"b_problem": 32}), 1e5)
    assert advice["n"] == 32 and advice["n_leaders"] == [8, 16, 32]
    assert "8, 16, 32 lead there" in advice["n_source"] and "largest n" in advice["n_source"]
    pair = {"compute": 1e5, "n": 64, "b_problem": 128, "leaders": {"n": [32, 64], "b_problem": [128, 256]},
            "status": {"n": "material", "b_problem": "material"}}  # fmt: skip
    fixed_batch = recommend(_fits_file([pair], ["b_problem", "n"], {"batch": 8192}), 1e5)
    assert fixed_batch["b_problem"] == 256 and fixed_batch["n"] == 32 and fixed_batch["batch"] == 8192
    assert "stability" in fixed_batch["b_problem_source"]
