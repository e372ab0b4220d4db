"""The leaders at each compute point: a value is behind only by a margin that is material (over the
tolerance) and resolved (in the replicas, and beyond the measured noise near the anchor)."""

import numpy as np
from known_truth import SCENARIOS, draw

from isocompute.errors import plain
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import RewardFit
from isocompute.fits.frontier import Curve
from isocompute.fits.leaders import (ALL_LEAD, CENSORED, MATERIAL, SINGLE, ColumnLeaders, CurveRewards, column_leaders, leading,
                                     replica_leading, resolved_at_once)  # fmt: skip
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


def test_the_band_holds_at_every_point_at_once_where_the_per_point_rule_does_not() -> None:
    """Eight identical curves at 40 points, each replica adding its own noise: the per-point rule (80 % of
    replicas) finds a curve behind somewhere, as dozens of comparisons at that level do; the band, the
    bootstrap max statistic over every curve and point together, puts none behind. A margin of eight spreads
    of the margin is found by both."""
    rng = np.random.default_rng(0)
    keys = [(2**i,) for i in range(8)]
    truth = np.full((8, 40), 0.5)
    shared = rng.normal(0, 0.01, (8, 40))
    point = CurveRewards(keys, truth + shared, np.full(8, 0.3), np.zeros(8))
    replicas = [truth + shared + rng.normal(0, 0.01, (8, 40)) for _ in range(100)]
    per_point = leading(point, 0.005, replicas)
    band = leading(point, 0.005, replicas, simultaneous=True)
    assert not per_point.all() and band.all()
    lower = point.rewards.copy()
    lower[0] -= 0.12
    clear = CurveRewards(keys, lower, point.anchors, point.noise)
    moved = [r - np.where(np.arange(8)[:, None] == 0, 0.12, 0.0) for r in replicas]
    assert not leading(clear, 0.005, moved, simultaneous=True)[0].any() and not leading(clear, 0.005, moved)[0].any()


def test_a_run_that_ended_is_censored_not_absent() -> None:
    """Beyond its last point, and between its first step and its first point, a run is a candidate at its
    fitted value: where it may lead the point is censored and names where the run was measured; where it is
    materially behind the point is evidence."""
    fit = RewardFit(0.3, 0.6, 5.0, 1.5, 0.0, 10)
    curve = Curve((8,), np.array([1e4, 1e5]), np.array([0.35, 0.45]), fit, first_step=1e3)
    values = curve.censored(np.array([5e2, 2e3, 5e4, 1e6]))
    assert np.isnan(values[0]) and np.isnan(values[2]) and values[1] == fit(2e3) and values[3] == fit(1e6)
    rewards = np.array([[np.nan, np.nan], [0.50, 0.50], [0.40, 0.70]])
    censored = np.array([[True, True], [False, False], [False, False]])
    point = CurveRewards(KEYS, rewards, np.full(3, 0.3), np.zeros(3), np.where(censored, [[0.55, 0.55]], np.nan))
    lead = leading(point, 0.01)
    leaders = column_leaders(KEYS, rewards, lead, 0, "n", censored, [(1e3, 1e4), (1e3, 1e6), (1e3, 1e6)])
    assert leaders.status == [CENSORED, MATERIAL] and leaders.leaders == [[16], [32]]
    assert "n = 8, measured only from C = 1e+03 to 1e+04, may lead here" in leaders.reasons[0]


def test_a_point_whose_band_holds_every_value_is_no_evidence() -> None:
    point = ColumnLeaders(np.array([8, 16]), [[8], [16]], np.array([8.0, 16.0]), np.array([8.0, 16.0]),
                          [MATERIAL, MATERIAL], [None, None])  # fmt: skip
    band = ColumnLeaders(np.array([8, 16]), [[8, 16, 32], [16]], np.array([8.0, 16.0]), np.array([32.0, 16.0]),
                         [ALL_LEAD, MATERIAL], ["every n measured here (8, 16, 32) leads", None])  # fmt: skip
    kept = resolved_at_once(point, band)
    assert kept.status == [ALL_LEAD, MATERIAL] and kept.leaders == [[8, 16, 32], [16]] and kept.high.tolist() == [32.0, 16.0]


def test_messages_name_plain_values() -> None:
    assert str(plain(sorted({np.int64(6400), np.int64(1280)}))) == "[1280, 6400]"
    assert repr(plain((np.float64(0.5), "run"))) == "(0.5, 'run')"


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
