"""An arm's forecast beyond its measured part (`adaptive.extrapolation`) and the rule's use of it
(`decisions.below_by_forecast`); the calibration over many draws is tests/benchmark_extrapolation.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.adaptive.decisions import Decision, below_by_forecast
from isocompute.adaptive.extrapolation import (
    SEEN_FROM,
    Forecast,
    earlier_miss,
    forecast,
    forecast_arms,
    shared_slope,
)
from isocompute.adaptive.rungs import AdaptiveSettings
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import FitFailure, RewardFit, fit_reward, reward_curve
from isocompute.fits.study_fit import fit_study

COMPUTE = np.geomspace(1e3, 1e7, 17)
R0 = 0.1


def noisy(a: float, mid: float, slope: float, seed: int, noise: float = 0.01) -> np.ndarray:
    return reward_curve(np.log10(COMPUTE), R0, a, mid, slope) + np.random.default_rng(seed).normal(0, noise, len(COMPUTE))


def test_forecast_of_a_known_sigmoid_holds_its_truth_at_the_rate_of_its_level() -> None:
    """Seen to half its log range (a quarter of its points unseen beyond the midpoint), the forecast's interval
    holds the true curve at its last point on most of 40 draws, and is centred near it."""
    seen, unseen = COMPUTE[:11], COMPUTE[11:]
    truth = reward_curve(np.log10(unseen), R0, 0.6, 4.5, 1.0)
    held, errors = [], []
    for seed in range(40):
        result = forecast(8, seen, noisy(0.6, 4.5, 1.0, seed)[:11], unseen, R0, None, 30, seed)
        assert isinstance(result, Forecast)
        held.append(result.low[-1] <= truth[-1] <= result.high[-1])
        errors.append(result.reward[-1] - truth[-1])
    assert np.mean(held) >= 0.8
    assert abs(np.median(errors)) < 0.02


def test_an_arm_with_too_few_points_is_not_extrapolated() -> None:
    result = forecast(8, COMPUTE[:4], noisy(0.6, 4.5, 1.0, 0)[:4], COMPUTE[4:], R0, None, 30, 0)
    assert isinstance(result, FitFailure) and result.kind == "too_few_points"


def test_the_checked_interval_is_the_curves_widened_by_the_arms_own_earlier_miss() -> None:
    """Setting 3 of the calibration log: the refits' interval, widened on each side by how far the arm's first half
    (in compute) extrapolated one doubling missed the full fit, per doubling ahead; refused where that half holds
    too few points to check on."""
    seen, reward = COMPUTE[:11], noisy(0.6, 4.5, 1.0, 3)[:11]
    fit = fit_reward(seen, reward, r0=R0, decline_level=0.0)
    assert isinstance(fit, RewardFit)
    miss = earlier_miss(8, seen, reward, fit, R0, None)
    assert isinstance(miss, float) and miss > 0
    at = np.array([seen[-1] * 2, seen[-1] * 8])
    checked = forecast(8, seen, reward, at, R0, None, 30, 3, checked=True)
    plain = forecast(8, seen, reward, at, R0, None, 30, 3)
    assert isinstance(checked, Forecast) and isinstance(plain, Forecast)
    np.testing.assert_allclose(checked.reward, plain.reward)
    # One doubling out the interval reaches past the fit by the miss on each side; three doublings out, by three times it.
    for i, doublings in enumerate((1, 3)):
        assert checked.high[i] >= checked.reward[i] + doublings * miss and checked.low[i] <= checked.reward[i] - doublings * miss
    few = forecast(8, COMPUTE[:6], noisy(0.6, 4.5, 1.0, 3)[:6], at, R0, None, 30, 3, checked=True)
    assert isinstance(few, FitFailure) and few.kind == "too_few_points"


def test_a_held_slope_is_kept_by_the_forecast_and_the_fit() -> None:
    fit = fit_reward(COMPUTE[:9], noisy(0.6, 4.5, 1.0, 1)[:9], r0=R0, slope=1.3)
    assert isinstance(fit, RewardFit) and fit.b == 1.3 and not any(flag.startswith("b at") for flag in fit.flags)
    result = forecast(8, COMPUTE[:9], noisy(0.6, 4.5, 1.0, 1)[:9], COMPUTE[9:], R0, 1.3, 30, 1)
    assert isinstance(result, Forecast) and result.slope == 1.3


def test_the_shared_slope_is_the_other_identified_arms_median() -> None:
    def made(b: float, flags: tuple[str, ...] = ()) -> RewardFit:
        return RewardFit(R0, 0.6, 4.5, b, 0.01, 17, flags)

    fits = {2: made(0.8), 4: made(1.0), 8: made(3.0, ("A not identified",)), 16: made(1.2), 32: FitFailure("flat", "")}
    assert shared_slope(fits, 2) == 1.1  # 4 and 16: 8 is flagged, 32 failed, 2 is the arm itself
    assert shared_slope({8: made(1.0)}, 8) is None


def test_an_arm_far_below_stops_by_its_forecast_and_the_frontiers_arm_never() -> None:
    """Three arms cut at 55 % of their run (linear compute): n = 2 rises to 0.3, the others to 0.66 and 0.65, level at the cut. The forecast puts n = 2
    far under the frontier's lower edge: it stops, whatever its unsaturated ceiling; the frontier's arm and a
    close arm run on; an arm seen to less than `SEEN_FROM` of its run is not decided by the forecast."""
    curves = {2: (0.3, 4.0), 4: (0.66, 4.9), 8: (0.65, 4.8)}
    rows = [
        {"n": n, "step": i + 1, "compute_rollouts": c, "avg@4": value, "b_problem": 32}
        for n, (a, mid) in curves.items()
        for i, (c, value) in enumerate(zip(COMPUTE[:14], noisy(a, mid, 1.0, n, 0.005)[:14]))
    ]
    evals = pd.DataFrame(rows)
    fit = fit_study(evals, FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=R0), resamples=30, seed=0)
    steps = dict.fromkeys(curves, 14)
    extend = [Decision(n, "extend", "kept", {}) for n in curves]
    end = float(COMPUTE[13]) * 1.8  # seen to more than SEEN_FROM of its run
    decided = {d.n: d for d in below_by_forecast(fit, extend, steps, dict.fromkeys(curves, end), AdaptiveSettings(), 0)}
    assert decided[2].action == "stop" and decided[2].numbers["rule"] == "extrapolate"
    assert decided[2].numbers["forecast_upper"] < fit["frontier"][-1]["reward_low"] - fit["tolerance"]
    assert decided[8].action == "extend" and decided[4].action == "extend"
    # An arm the forecast read and kept records by how much it missed stopping (the round's record says why it ran).
    assert decided[8].numbers["forecast_margin"] <= fit["tolerance"]
    assert decided[8].numbers["forecast_upper"] >= fit["frontier"][-1]["reward_low"] - fit["tolerance"]
    far = COMPUTE[13] / SEEN_FROM * 4
    unseen = below_by_forecast(fit, extend, steps, dict.fromkeys(curves, far), AdaptiveSettings(), 0)
    assert all(d.action == "extend" for d in unseen)


def test_forecast_arms_reads_a_studys_measured_rows() -> None:
    table = pd.DataFrame(
        [{"n": n, "compute_rollouts": c, "avg@4": v} for n in (2, 4) for c, v in zip(COMPUTE, noisy(0.5 + n / 40, 4.5, 1.0, n))]
    )
    result = forecast_arms(table[table["compute_rollouts"] < 1e6], "avg@4", "compute_rollouts", {2: [1e7], 8: [1e7]}, R0, 30, 0)
    assert isinstance(result[2], Forecast) and result[2].compute.tolist() == [1e7]
    assert isinstance(result[8], FitFailure) and result[8].kind == "not_measured"


def test_the_pilot_reads_an_arm_against_the_frontiers_arms_own_forecast() -> None:
    """Pilot F (`forecast_frontier`): n = 8 has saturated level with the frontier's lower edge at C_top, so the
    forecast part alone keeps it, but the frontier's arm n = 4 is still rising and its forecast's lower edge over
    the rest of the range lies above n = 8's upper edge: the frontier is at least n = 4's curve, so n = 8 cannot
    lead there, and the part stops it. n = 16, rising later and steeper, may still overtake and runs on."""
    curves = {4: (0.9, 6.0), 8: (0.6, 4.5), 16: (0.99, 6.2)}
    rows = [
        {"n": n, "step": i + 1, "compute_rollouts": c, "avg@4": value, "b_problem": 32}
        for n, (a, mid) in curves.items()
        for i, (c, value) in enumerate(zip(COMPUTE[:14], noisy(a, mid, 1.0, n, 0.005)[:14]))
    ]
    fit = fit_study(pd.DataFrame(rows), FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=R0), resamples=30, seed=0)
    assert fit["optimum_at_max_compute"]["n"] == 4
    steps = dict.fromkeys(curves, 14)
    extend = [Decision(n, "extend", "kept", {}) for n in curves]
    ends = dict.fromkeys(curves, float(COMPUTE[13]) * 1.95)  # seen to just past SEEN_FROM of the run
    plain = {d.n: d for d in below_by_forecast(fit, extend, steps, ends, AdaptiveSettings(), 0)}
    pilot = {d.n: d for d in below_by_forecast(fit, extend, steps, ends, AdaptiveSettings(), 0, against_arm=True)}
    assert plain[8].action == "extend" and "frontier_arm_margin" not in plain[8].numbers
    assert pilot[8].action == "stop" and pilot[8].numbers["rule"] == "extrapolate"
    assert pilot[8].numbers["frontier_arm_margin"] > fit["tolerance"] >= pilot[8].numbers["forecast_margin"]
    assert pilot[16].action == "extend" and pilot[16].numbers["frontier_arm_margin"] <= fit["tolerance"]
    assert pilot[4].action == "extend"
