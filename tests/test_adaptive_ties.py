"""The tie's part of the adaptive rule (`decisions.tied_to_frontier`): an arm level with the frontier, which no band
separates from it, stops as tied; the frontier's arm, its neighbours and an arm behind never do; and a tied arm is
censored beyond its stop, not settled, so the arms left running cannot make a law there. The spend and the
verdicts over many draws are tests/benchmark_peers.py's (docs/log/adaptive-peers.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from isocompute.adaptive.decisions import TIE_FROM, Decision, settled_arms, tied_to_frontier
from isocompute.adaptive.rungs import PILOT_RULES, RULES, AdaptiveSettings, guard_arms
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import reward_curve
from isocompute.fits.study_fit import fit_study

COMPUTE = np.geomspace(1e3, 1e7, 17)
R0 = 0.1
OPTIONS = FitOptions("avg@4", "compute_rollouts", ("n",), base_reward=R0)


def table(curves: dict[int, tuple[float, float]], points: int, noise: float = 0.005) -> pd.DataFrame:
    """Each arm's first `points` evaluations of its sigmoid (ceiling, log10 midpoint; slope 1) with noise."""
    rows = []
    for n, (a, mid) in curves.items():
        truth = reward_curve(np.log10(COMPUTE[:points]), R0, a, mid, 1.0)
        values = truth + np.random.default_rng(n).normal(0, noise, points)
        rows += [{"n": n, "step": i + 1, "compute_rollouts": c, "avg@4": v, "b_problem": 32}
                 for i, (c, v) in enumerate(zip(COMPUTE[:points], values))]  # fmt: skip
    return pd.DataFrame(rows)


def test_an_arm_level_with_the_frontier_stops_as_tied_and_a_guard_or_an_arm_behind_never() -> None:
    """Five arms seen to 14 of 17 points: n = 2, 4, 8, 16 one curve, n = 32 far below. Past `TIE_FROM` of their
    runs the level arms that are no guard (not the frontier's arm, not its neighbours) stop as tied, with the two
    forecasts' intervals in the numbers; the frontier's arm and its neighbours run on, as does n = 32, which the
    data place behind (the forecast's own stop is `below_by_forecast`'s); before `TIE_FROM` nothing ties."""
    curves = {2: (0.6, 4.5), 4: (0.6, 4.5), 8: (0.6, 4.5), 16: (0.6, 4.5), 32: (0.3, 4.0)}
    fit = fit_study(table(curves, 14), OPTIONS, resamples=30, seed=0)
    n_top = int(fit["optimum_at_max_compute"]["n"])
    guarded = set(guard_arms(sorted(curves), n_top))
    steps = dict.fromkeys(curves, 14)
    extend = [Decision(n, "extend", "kept", {}) for n in curves]
    end = float(COMPUTE[13]) * 1.2  # seen to more than TIE_FROM of its run
    decided = {
        d.n: d
        for d in tied_to_frontier(fit, extend, steps, dict.fromkeys(curves, end), AdaptiveSettings(), 0)
    }
    tied = {n for n, d in decided.items() if d.action == "stop"}
    assert tied and tied <= {2, 4, 8, 16} - guarded, (n_top, tied)
    for n in tied:
        numbers = decided[n].numbers
        assert numbers["rule"] == "tie" and numbers["seen"] >= TIE_FROM
        low, high = numbers["frontier_forecast"]
        assert (
            numbers["forecast"][1] >= low - fit["tolerance"]
            and numbers["forecast"][0] <= high + fit["tolerance"]
        )
    assert decided[32].action == "extend"
    far = float(COMPUTE[13]) / TIE_FROM * 4
    unseen = tied_to_frontier(fit, extend, steps, dict.fromkeys(curves, far), AdaptiveSettings(), 0)
    assert all(d.action == "extend" for d in unseen)


def test_a_tied_arm_is_censored_beyond_its_stop_so_the_arms_left_make_no_law_there() -> None:
    """A flat truth (four arms, one curve) whose two smallest arms stopped at 11 of 17 points. Stopped as tied they
    are not settled: they may lead beyond their stop, every point there where they lead is `censored`, none is
    material, and there is no law. Settled as behind (a bound's stop) they would be no candidates there, and those
    points would hold the two large arms alone: the reading the tie's part must not give."""
    curves = {2: (0.6, 4.5), 4: (0.6, 4.5), 8: (0.6, 4.5), 16: (0.6, 4.5)}
    full = table(curves, 17)
    cut = full[(full["n"] >= 8) | (full["step"] <= 11)]
    reached = {n: float(COMPUTE[10]) for n in (2, 4)}
    tied = {n: {"rule": "tie", "reason": "tied with the frontier"} for n in (2, 4)}
    assert settled_arms(tied, reached) == {}
    censored = fit_study(cut, OPTIONS, resamples=30, seed=0, settled=settled_arms(tied, reached))
    beyond = [row for row in censored["optimum_points"] if row["compute"] > COMPUTE[10] * 10**0.05]
    assert beyond and not any(row["status"]["n"] == "material" for row in beyond), beyond
    assert any(row["status"]["n"] == "censored" for row in beyond)
    assert not censored["optimum"]["n"]["ok"]
    bound = {n: {"rule": "bound", "reason": "below the frontier"} for n in (2, 4)}
    settled = fit_study(cut, OPTIONS, resamples=30, seed=0, settled=settled_arms(bound, reached))
    after = [row for row in settled["optimum_points"] if row["compute"] > COMPUTE[10] * 10**0.05]
    assert all(set(row["leaders"]["n"]) <= {8, 16} and row["status"]["n"] != "censored" for row in after), (
        after
    )


def test_where_no_point_tells_the_arms_apart_the_frontiers_neighbours_may_tie_and_its_arm_runs() -> None:
    """Three arms, one curve, seen past `TIE_FROM`. No point is material, so the frontier's arm is whichever tied
    arm the draw put first; with the `tie_guards` part its neighbour stops as tied too and it runs on; without the
    part the neighbour is a guard and runs. Once a point is material (a fourth arm far below), the neighbours are
    guards again."""
    level = {4: (0.6, 4.5), 8: (0.6, 4.5), 16: (0.6, 4.5)}
    end = float(COMPUTE[13]) * 1.2

    def decided(curves: dict[int, tuple[float, float]], guard_ties: bool) -> tuple[set[int], set[int]]:
        fit = fit_study(table(curves, 14, noise=0.002), OPTIONS, resamples=30, seed=0)
        extend = [Decision(n, "extend", "kept", {}) for n in curves]
        ends = dict.fromkeys(curves, end)
        out = tied_to_frontier(
            fit, extend, dict.fromkeys(curves, 14), ends, AdaptiveSettings(), 0, guard_ties
        )
        n_top = int(fit["optimum_at_max_compute"]["n"])
        neighbours = set(guard_arms(sorted(curves), n_top)) - {n_top}
        assert all(d.numbers["rule"] == "tie" for d in out if d.action == "stop")
        assert all(
            ("guards no frontier" in d.reason) == (d.n in neighbours) for d in out if d.action == "stop"
        )
        assert n_top not in {d.n for d in out if d.action == "stop"}
        return neighbours, {d.n for d in out if d.action == "stop"}

    assert "tie_guards" in RULES and "tie_guards" not in PILOT_RULES
    neighbours, tied = decided(level, True)
    assert neighbours and neighbours <= tied
    neighbours, tied = decided(level, False)
    assert not neighbours & tied
    neighbours, tied = decided({**level, 2: (0.2, 4.0)}, True)
    assert not neighbours & tied
