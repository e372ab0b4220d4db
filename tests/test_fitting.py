"""The fits recover known parameters from noisy synthetic curves on a log-spaced compute grid."""

import numpy as np
import pandas as pd
import pytest

from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import (
    DECLINE_LEVEL,
    FitFailure,
    OptimumFit,
    RewardFit,
    declining_curve,
    declining_jacobian,
    declining_past_mid,
    fit_reward,
    fit_to_json,
    optimum_curve,
    record_breaking,
    reward_curve,
    reward_fit_from_json,
)
from isocompute.fits.frontier import Curve, distinct_computes, frontier
from isocompute.fits.law import decade_weights, fit_law, fit_leaders, judge_law
from isocompute.fits.leaders import ALL_LEAD, MATERIAL, ColumnLeaders
from isocompute.fits.study_fit import fit_study

COMPUTE = np.geomspace(1e3, 1e7, 13)


def synthetic_evals(curves: dict[int, tuple[float, float, float, float]], noise: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for n, params in curves.items():
        reward = reward_curve(np.log10(COMPUTE), *params) + rng.normal(0, noise, len(COMPUTE))
        rows += [
            {"run": f"n{n}", "n": n, "b_problem": 32, "step": i + 1, "compute_rollouts": c, "avg@4": r}
            for i, (c, r) in enumerate(zip(COMPUTE, reward))
        ]
    return pd.DataFrame(rows)


# Larger n: slower start, higher ceiling; each n dominates a compute range.
CURVES = {8: (0.3, 0.55, 3.5, 1.5), 32: (0.3, 0.62, 4.5, 1.5), 128: (0.3, 0.70, 5.5, 1.5)}


def test_reward_sigmoid_recovers_its_parameters() -> None:
    truth = (0.2, 0.7, 4.6, 1.2)
    reward = reward_curve(np.log10(COMPUTE), *truth) + np.random.default_rng(1).normal(0, 0.005, len(COMPUTE))
    fit = fit_reward(COMPUTE, reward)
    assert isinstance(fit, RewardFit)
    assert fit.a == pytest.approx(truth[1], abs=0.03)
    assert fit.log10_c_mid == pytest.approx(truth[2], abs=0.15)
    assert fit.b == pytest.approx(truth[3], rel=0.3)


def test_too_few_points_and_flat_curves_are_recorded_not_dropped() -> None:
    few = fit_reward(COMPUTE[:3], np.array([0.1, 0.2, 0.3]))
    assert isinstance(few, FitFailure) and "need 5" in few.reason
    exact = fit_reward(COMPUTE[:4], np.array([0.1, 0.2, 0.3, 0.35]))
    assert isinstance(exact, FitFailure) and "exact interpolation" in exact.reason
    assert isinstance(fit_reward(COMPUTE[:4], np.array([0.1, 0.2, 0.3, 0.35]), r0=0.05), RewardFit)
    flat = fit_reward(COMPUTE, np.full(len(COMPUTE), 0.4))
    assert isinstance(flat, FitFailure) and "flat" in flat.reason


def _curve(key: tuple[int, ...], fit: RewardFit, low: float = COMPUTE[0], high: float = COMPUTE[-1]) -> Curve:
    compute = np.geomspace(low, high, 5)
    return Curve(key, compute, fit(compute), fit)


def test_frontier_picks_the_right_n_where_curves_cross() -> None:
    curves = [_curve((n,), RewardFit(*params, rmse=0.0, num_points=13)) for n, params in CURVES.items()]
    envelope = frontier(curves, COMPUTE, ["n"])
    assert envelope["n"].iloc[0] == 8
    assert envelope["n"].iloc[-1] == 128
    assert envelope["n"].is_monotonic_increasing
    for c, reward in zip(envelope["compute"], envelope["reward"]):
        assert reward == pytest.approx(max(curve.fit(c) for curve in curves))


def test_frontier_ties_go_to_the_smaller_n_and_single_curves_work() -> None:
    same = RewardFit(0.1, 0.5, 4.0, 1.0, 0.0, 5)
    assert set(frontier([_curve((16,), same), _curve((4,), same)], COMPUTE, ["n"])["n"]) == {4}
    assert set(frontier([_curve((64,), same)], COMPUTE, ["n"])["n"]) == {64}
    assert frontier([], COMPUTE, ["n"]).empty


def test_a_curve_competes_only_inside_its_measured_range_unless_extrapolation_is_asked() -> None:
    high = RewardFit(0.1, 0.9, 4.0, 1.0, 0.0, 5)
    low = RewardFit(0.1, 0.3, 4.0, 1.0, 0.0, 5)
    curves = [_curve((4,), low), _curve((256,), high, low=1e5)]
    inside = frontier(curves, COMPUTE, ["n"])
    assert (inside.loc[inside["compute"] < 1e5 / 1.2, "n"] == 4).all()
    assert (inside.loc[inside["compute"] >= 1e5, "n"] == 256).all()
    assert not inside["extrapolated"].any()
    beyond = frontier(curves, COMPUTE, ["n"], extrapolate=True)
    assert (beyond["n"] == 256).all()
    assert beyond["extrapolated"].tolist() == (beyond["compute"] < 1e5 / 10**0.05).tolist()


def test_a_curve_without_a_fit_competes_with_its_measured_points() -> None:
    fitted = RewardFit(0.1, 0.4, 4.0, 1.0, 0.0, 5)
    compute = np.geomspace(1e4, 1e7, 3)
    unfitted = Curve((64,), compute, np.array([0.6, 0.7, 0.8]), FitFailure("too_few_points", "3 points"))
    envelope = frontier([_curve((8,), fitted), unfitted], COMPUTE, ["n"])
    late = envelope[envelope["compute"] >= 1e4]
    assert (late["n"] == 64).all() and not late["fitted"].any()
    assert late["reward"].iloc[-1] == pytest.approx(0.8)


def test_distinct_computes_merge_checkpoints_a_little_apart() -> None:
    assert distinct_computes([512, 544, 1024, 1024, 2048, 0]).round().tolist() == [528.0, 1024.0, 2048.0]


def test_dense_checkpoints_keep_their_range() -> None:
    """One evaluation per step (0.01-0.045 decades apart) never chains into one point: each group is at most
    0.05 decades wide, so two decades of steps stay some thirty points."""
    steps = np.arange(1, 200)
    points = distinct_computes(steps * 1e17)
    assert points.min() < 2e17 and points.max() > 1.5e19
    assert 25 <= len(points) <= 60
    assert np.all(np.diff(np.log10(points)) > 0.01)


def test_joint_frontier_reports_the_pair() -> None:
    curves = [_curve((32, 8), RewardFit(0.3, 0.5, 3.5, 1.5, 0, 9)), _curve((8, 128), RewardFit(0.3, 0.7, 5.5, 1.5, 0, 9))]
    envelope = frontier(curves, COMPUTE, ["b_problem", "n"])
    assert envelope[["b_problem", "n"]].iloc[0].tolist() == [32, 8]
    assert envelope[["b_problem", "n"]].iloc[-1].tolist() == [8, 128]


def test_nstar_sigmoid_recovers_paper_scale_parameters() -> None:
    # The study's Easy, B_problem = 32 fit: L = 6.09, k = 4.75, log10 C0 = 5.84, b = 2.73.
    x = np.linspace(4.0, 7.5, 40)
    y = optimum_curve(x, 6.09, 4.75, 5.84, 2.73) + np.random.default_rng(2).normal(0, 0.1, len(x))
    fit = fit_law(10**x, 2**y)
    assert isinstance(fit, OptimumFit)
    assert fit.log10_c0 == pytest.approx(5.84, abs=0.15)
    assert fit.L == pytest.approx(6.09, abs=0.6)
    assert fit.b == pytest.approx(2.73, abs=0.4)


def test_inverse_sigmoid_of_b_problem_star() -> None:
    x = np.linspace(1.0, 3.5, 30)
    y = optimum_curve(x, -4.0, 5.0, 2.0, 8.0)
    fit = fit_law(10**x, 2**y)
    assert isinstance(fit, OptimumFit) and fit.L == pytest.approx(-4.0, abs=0.2)
    assert fit.log10_c0 == pytest.approx(2.0, abs=0.15)


def test_each_decade_of_compute_weighs_alike() -> None:
    """Checkpoints dense at low compute (where nothing moves) weigh no more than a sparse high decade."""
    compute = np.concatenate([np.geomspace(1e3, 1e4, 10), [1e5, 1e6]])
    weights = decade_weights(compute)
    assert weights.mean() == pytest.approx(1.0)
    assert weights[:9].sum() == pytest.approx(weights[10], rel=0.01)  # nine points a ninth of a decade apart
    assert weights[-1] == pytest.approx(weights[10])


def leaders_of(sets: list, status: list[str] | None = None) -> ColumnLeaders:
    """Leader sets (a value or a list of values per point) as the fits find them, the first value the argmax."""
    sets = [[v] if isinstance(v, int | np.integer) else list(v) for v in sets]
    return ColumnLeaders(
        np.array([s[0] for s in sets]), [sorted(s) for s in sets], np.array([min(s) for s in sets], dtype=float),
        np.array([max(s) for s in sets], dtype=float), status or [MATERIAL] * len(sets), [None] * len(sets),
    )  # fmt: skip


def _judge(values: list, chosen: list[list], band: list | None = None) -> object:
    compute = np.geomspace(1e3, 1e6, len(values))
    point = leaders_of(values)
    replicas = [leaders_of(row) for row in chosen]
    laws = [fit_leaders(compute, replica) for replica in replicas]
    return judge_law(compute, point, replicas, laws, "n", fit_leaders(compute, point), leaders_of(band) if band else None)


def test_the_verdict_comes_from_the_replicas() -> None:
    rising = [2, 2, 4, 8, 16, 32, 32, 32]
    agreed = _judge(rising, [rising] * 9 + [[2, 2, 2, 8, 16, 32, 32, 64]])
    assert isinstance(agreed.law, OptimumFit) and agreed.identified == "identified" and agreed.agreement >= 0.8
    assert agreed.rise["value"] > 3 and agreed.rise["interval"][0] > 0.5
    constant = _judge([16] * 8, [[16] * 8] * 10)
    assert constant.law.kind == "constant" and "constant at 16" in constant.law.reason
    flat = [8, 64, 16, 512, 32, 8, 128, 16]
    noise = _judge(flat, [list(np.roll(flat, r)) for r in range(10)])
    assert isinstance(noise.law, FitFailure) and noise.law.kind in ("not_resolved", "noise", "not_monotone")
    wiggle = [8, 8, 32, 32, 16, 16, 64, 64]
    reversed_ = _judge(wiggle, [wiggle] * 10)
    assert reversed_.law.kind == "not_monotone" and "32 -> 16" in reversed_.law.reason
    # A reversal is claimed where the sets that hold at every point at once part, whatever share of the
    # replicas' own narrow sets part there (reported beside it).
    split = _judge(wiggle, [wiggle] * 5 + [[8, 8, 16, 32, 32, 32, 64, 64]] * 5)
    assert split.reversal["replicas"] == 0.5 and split.law.kind == "not_monotone"
    wide = [8, 8, (16, 32), (16, 32), (16, 32), (16, 32), 64, 64]
    held = _judge(wiggle, [wiggle] * 10, band=wide)
    assert held.reversal is None and getattr(held.law, "kind", None) != "not_monotone"
    few = _judge([2, 4, 8, 16], [[2, 4, 8, 16]] * 10)
    assert few.law.kind == "too_few_points"
    step = _judge([2, 2, 2, 2, 8, 8, 8, 8], [[2, 2, 2, 2, 8, 8, 8, 8]] * 10)
    assert step.identified == "step" and "from 2 to 8" in step.reason and "slope not identified" in step.reason
    endless = _judge(list(2 ** np.arange(1, 9)), [list(2 ** np.arange(1, 9))] * 10)
    assert endless.identified == "plateau_not_reached" and endless.slope_at_top["value"] > 1.5
    falling = _judge([256, 256, 128, 64, 32, 16, 16, 16], [[256, 256, 128, 64, 32, 16, 16, 16]] * 10)
    assert isinstance(falling.law, OptimumFit) and falling.law.direction == "falling" and falling.identified
    compute = np.geomspace(1e3, 1e6, 8)
    unjudged = judge_law(compute, leaders_of(rising), None, [], "n", fit_leaders(compute, leaders_of(rising)))
    assert unjudged.law.kind == "not_judged"


def test_a_reversal_needs_leader_sets_apart_against_the_direction() -> None:
    """32 -> 16 between two points whose leaders overlap ({16, 32} then {16}) is no reversal, however many
    replicas agree on the argmax; disjoint sets ({32} then {16}) in every replica are."""
    overlapping = [8, 8, (32, 16), (32, 16), 16, 16, 64, 64]
    judged = _judge(overlapping, [overlapping] * 10)
    assert getattr(judged.law, "kind", None) != "not_monotone" and judged.reversal is None
    apart = [8, 8, 32, 32, 16, 16, 64, 64]
    assert _judge(apart, [apart] * 10).law.kind == "not_monotone"


def test_points_where_every_value_leads_are_no_evidence() -> None:
    """A point where every n leads enters neither the law nor the verdict: with only those, no law; with
    material points beside them, the law is fitted to the material ones alone."""
    compute = np.geomspace(1e3, 1e6, 8)
    every = leaders_of([(8, 16, 32)] * 8, [ALL_LEAD] * 8)
    none = judge_law(compute, every, [every] * 10, [fit_leaders(compute, every)] * 10, "n", fit_leaders(compute, every))
    assert none.law.kind == "no_evidence" and none.points_used == 0 and "every n measured" in none.law.reason
    sets = [(32, 8, 16), (32, 8, 16), 8, 8, 16, 16, 32, 32, 32]
    status = [ALL_LEAD, ALL_LEAD] + [MATERIAL] * 7
    compute = np.geomspace(1e3, 1e6, len(sets))
    point = leaders_of(sets, status)
    law = fit_leaders(compute, point)
    assert isinstance(law, OptimumFit) and law.num_points == 7
    judged = judge_law(compute, point, [point] * 10, [law] * 10, "n", law)
    assert isinstance(judged.law, OptimumFit), judged.law
    assert judged.evidence["material"] == 7 and judged.evidence["every_value_leads"] == 2


def test_the_law_passes_through_leader_sets() -> None:
    """Where two adjacent n lead, the law may pass between them: it is charged nothing inside the set."""
    compute = np.geomspace(1e3, 1e6, 10)
    sets = [4, 4, (4, 8), (8, 16), 16, (16, 32), 32, (32, 64), 64, 64]
    law = fit_leaders(compute, leaders_of(sets))
    assert isinstance(law, OptimumFit) and law.rmse < 0.2
    predicted = np.log2(law(compute))
    lows, highs = np.log2([min(np.atleast_1d(s)) for s in sets]), np.log2([max(np.atleast_1d(s)) for s in sets])
    assert np.all((predicted >= lows - 0.5) & (predicted <= highs + 0.5))


def test_unsaturated_curves_are_flagged_but_kept() -> None:
    reward = reward_curve(np.log10(COMPUTE), 0.2, 0.8, 7.5, 1.0)
    fit = fit_reward(COMPUTE, reward, r0=0.2)
    assert isinstance(fit, RewardFit)
    assert any(flag.startswith("A not identified: curve not saturated") for flag in fit.flags)
    saturated = fit_reward(COMPUTE, reward_curve(np.log10(COMPUTE), 0.2, 0.8, 4.0, 1.5), r0=0.2)
    assert isinstance(saturated, RewardFit) and not saturated.flags


DENSE = np.geomspace(1e3, 1e7, 25)


def test_a_curve_that_falls_after_its_peak_gets_its_decline_and_keeps_it_in_the_replicas() -> None:
    truth = (0.2, 0.7, 4.0, 1.5, 0.03, 5.5)
    reward = declining_curve(np.log10(DENSE), *truth) + np.random.default_rng(2).normal(0, 0.003, len(DENSE))
    fit = fit_reward(DENSE, reward, r0=0.2)
    sigmoid = fit_reward(DENSE, reward, r0=0.2, start=RewardFit(0.2, 0.7, 4.0, 1.5, 0.0, len(DENSE)))
    assert isinstance(fit, RewardFit) and isinstance(sigmoid, RewardFit)
    assert fit.decline == pytest.approx(0.03, rel=0.3)
    assert fit.log10_c_peak == pytest.approx(5.5, abs=0.4)
    assert fit.free_parameters == sigmoid.free_parameters + 2 and sigmoid.decline == 0.0
    # The sigmoid alone reads the fall as a lower ceiling: at the last point it sits above the data.
    assert sigmoid(DENSE[-1]) - declining_curve(np.log10(DENSE[-1]), *truth) > 0.01
    assert abs(fit(DENSE[-1]) - declining_curve(np.log10(DENSE[-1]), *truth)) < 0.01
    # A replica starts from the chosen form and keeps it; the JSON form reads back to the same curve.
    replica = fit_reward(DENSE, reward + 0.002, r0=0.2, start=fit)
    assert isinstance(replica, RewardFit) and replica.decline > 0
    back = reward_fit_from_json(fit_to_json(fit))
    assert back == fit and back(DENSE[-1]) == pytest.approx(fit(DENSE[-1]))
    # The rising part alone is judged for saturation: a curve past its peak has saturated.
    assert not any(flag.startswith("A not identified") for flag in fit.flags)


@pytest.mark.parametrize(
    "params", [(0.2, 0.7, 4.0, 1.5, 0.03, 1.5), (0.455, 0.99, 4.9, 1.8, 0.0096, 0.8), (0.1, 0.5, 6.2, 0.7, 0.2, 0.3)]
)
def test_the_declining_jacobian_is_the_curves_derivative(params: tuple[float, ...]) -> None:
    """Central differences of `declining_past_mid` in each of (r0, A, C_mid, B, D, gap), away from the kink:
    moving C_mid moves the peak too, so its column carries the decline past the peak."""
    x = np.linspace(3.0, 7.0, 23)
    x = x[np.abs(x - params[2] - params[5]) > 1e-3]
    analytic = declining_jacobian(x, *params)
    step = 1e-6
    for column in range(len(params)):
        up, down = list(params), list(params)
        up[column] += step
        down[column] -= step
        numeric = (declining_past_mid(x, *up) - declining_past_mid(x, *down)) / (2 * step)
        np.testing.assert_allclose(analytic[:, column], numeric, atol=1e-7, err_msg=f"column {column}")


def test_a_replica_of_a_declining_fit_holds_the_shared_slope() -> None:
    """`slope` holds B in either form: a declining curve's refit from its start keeps B at the slope given."""
    reward = declining_curve(np.log10(DENSE), 0.2, 0.7, 4.0, 1.5, 0.03, 5.5)
    start = RewardFit(0.2, 0.7, 4.0, 1.5, 0.0, len(DENSE), anchored=True, decline=0.03, log10_c_peak=5.5)
    held = fit_reward(DENSE, reward, r0=0.2, start=start, slope=1.2)
    assert isinstance(held, RewardFit) and held.decline > 0
    assert held.b == 1.2 and held.r0 == 0.2
    assert not any(flag.startswith("b at") for flag in held.flags)


def test_a_noisy_sigmoid_is_seldom_given_a_decline() -> None:
    """At the level of one curve in a study of eight (`DECLINE_LEVEL` / 8), a monotone curve's noise, even a
    last point well below the others, seldom passes the F test: a dip on the last point alone never does."""
    declined = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        reward = reward_curve(np.log10(DENSE), 0.2, 0.7, 4.0, 1.5) + rng.normal(0, 0.01, len(DENSE))
        reward[-1] -= 0.04
        fit = fit_reward(DENSE, reward, r0=0.2, decline_level=DECLINE_LEVEL / 8)
        assert isinstance(fit, RewardFit)
        declined += fit.decline > 0
    assert declined <= 2


# The simulated policy's training-set studies: n = 4 peaks at ~0.994 and falls back by ~0.01 while the larger
# n go on to 1, so n* moves from 4 to larger n at ~2e6 (docs/log/fits-decline.md); 2-seed data are this precise.
PEAKED = {4: (0.455, 1.0, 4.9, 1.8, 0.0096, 5.7), 8: (0.455, 1.0, 4.95, 1.7, 0.0, 0.0),
          16: (0.455, 1.0, 5.05, 1.7, 0.0, 0.0), 32: (0.455, 1.0, 5.17, 1.75, 0.0, 0.0)}  # fmt: skip


@pytest.mark.parametrize("seed", range(2))
def test_a_small_n_that_falls_after_its_peak_hands_n_star_on(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    compute = np.geomspace(1e3, 1e7, 15)
    rows = []
    for n, params in PEAKED.items():
        reward = np.minimum(declining_curve(np.log10(compute), *params) + rng.normal(0, 0.0005, len(compute)), 1.0)
        rows += [{"run": f"n{n}", "n": n, "b_problem": 16, "step": i + 1, "compute_rollouts": c, "avg@4": r}
                 for i, (c, r) in enumerate(zip(compute, reward))]  # fmt: skip
    evals = pd.DataFrame(rows)
    options = FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=0.455)

    def law(fit: dict) -> dict:
        return fit["optimum"]["n"]

    falling = fit_study(evals, options, resamples=20, seed=seed, holdout_decades=0.0)
    assert law(falling)["ok"] and law(falling)["direction"] == "rising"
    assert [curve["decline"] > 0 for curve in falling["curves"]] == [True, False, False, False]
    monkeypatch.setattr("isocompute.fits.curves.DECLINE_LEVEL", 0.0)  # the sigmoid alone
    sigmoid = fit_study(evals, options, resamples=20, seed=seed, holdout_decades=0.0)
    assert not law(sigmoid)["ok"] and law(sigmoid)["kind"] == "constant" and "constant at 4" in law(sigmoid)["reason"]


def _fit(evals: pd.DataFrame, **options: object) -> dict:
    return fit_study(evals, FitOptions("avg@4", "compute_rollouts", **options), frontier_points=60)


@pytest.mark.parametrize("seed", range(3))
def test_study_fit_recovers_nstar_within_one_grid_step(seed: int) -> None:
    evals = synthetic_evals(CURVES, noise=0.004, seed=seed)
    result = _fit(evals)
    truths = [_curve((n,), RewardFit(*p, rmse=0.0, num_points=13)) for n, p in CURVES.items()]
    fitted = [_curve((c["key"]["n"],), reward_fit_from_json(c)) for c in result["curves"]]
    truth, estimate = frontier(truths, COMPUTE, ["n"]), frontier(fitted, COMPUTE, ["n"])
    grid = sorted(CURVES)
    steps = [abs(grid.index(a) - grid.index(b)) for a, b in zip(truth["n"], estimate["n"])]
    assert max(steps) <= 1
    assert result["optimum_at_max_compute"]["n"] == 128


def test_study_fit_averages_seeds_at_each_step() -> None:
    evals = synthetic_evals({8: CURVES[8]}, noise=0.0, seed=0)
    shifted = evals.assign(**{"avg@4": evals["avg@4"] + 0.02})
    result = _fit(pd.concat([evals, shifted]))
    assert result["curves"][0]["a"] == pytest.approx(CURVES[8][1] + 0.01, abs=0.01)


def test_record_breaking_keeps_first_entries_into_new_bins() -> None:
    compute = np.array([1, 2, 3, 4, 5, 6])
    reward = np.array([0.10, 0.105, 0.13, 0.12, 0.131, 0.2])
    assert record_breaking(compute, reward, 0.01).tolist() == [True, False, True, False, False, True]
    assert record_breaking(compute[::-1], reward[::-1], 0.01).tolist() == [True, False, False, True, False, True]


def test_record_breaking_points_are_selectable() -> None:
    evals = synthetic_evals({8: CURVES[8]}, noise=0.01, seed=4)
    every = _fit(evals)
    records = _fit(evals, points="record_breaking", record_bin=0.02)
    assert records["curves"][0]["num_points"] < every["curves"][0]["num_points"] == 13
