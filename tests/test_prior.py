"""The adaptive sweep's prior: what it reads, the band it checks the new model's frontier against, the arms it
stops and resumes, its fallback, the plan from it, and (marked heavy: a CI step of its own) known truth in pairs,
where model A's fitted law is model B's prior. `python tests/prior_truth.py` prints the pairs' figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from known_truth import recovery
from prior_truth import MISMATCHED, PAIRS, REALISTIC, REFUSED, SHIFTED, run_pairs, run_plain

from isocompute.adaptive.decisions import (
    above_own_plateau,
    decide,
    decide_round,
    round_state,
    settled_of_rounds,
)
from isocompute.adaptive.prior import (
    PAPER_LAWS,
    SPREAD_DOUBLINGS,
    Prior,
    contradiction,
    load_prior,
    planned_reach,
    prior_stop,
)
from isocompute.adaptive.rungs import (
    RULES,
    AdaptiveError,
    AdaptiveSettings,
    reached_rungs,
    rung_caps,
    trained_rungs,
)
from isocompute.fits.forms import optimum_curve

ARMS = [8, 16, 32, 64, 128, 256, 512, 1024]
SETTINGS = AdaptiveSettings(min_steps=10, audit_rungs=0)  # no audit: the rules alone
EASY = Prior("paper_easy", PAPER_LAWS["paper_easy"])


def law_entry(law: tuple[float, ...], ok: bool = True) -> dict[str, Any]:
    return {"ok": ok, "kind": None if ok else "constant", **dict(zip(("L", "k", "log10_c0", "b"), law)),
            "identified": "identified", "samples": [[*law, 0.1, 10]] * 3}  # fmt: skip


def fit_of(points: list[tuple[float, list[int]]], n_top: int, law: dict[str, Any] | None = None) -> dict[str, Any]:
    """A study fit's JSON with what the rounds read: the frontier's top, its arm, the material points' leaders."""
    return {
        "bootstrap": {"resamples": 30},
        "frontier": [{"compute": points[-1][0], "reward_low": 0.5}],
        "optimum_at_max_compute": {"n": n_top},
        "curves": [],
        "optimum_points": [{"compute": c, "leaders": {"n": lead}, "status": {"n": "material"}} for c, lead in points],
        "optimum": {"n": law or {"ok": False, "kind": "too_few_points"}},
    }


def test_load_prior_reads_every_form_and_names_what_is_wrong(tmp_path: Path) -> None:
    assert load_prior("paper_easy").law == PAPER_LAWS["paper_easy"]
    assert load_prior({"L": 5, "k": 3, "log10_c0": 5.5, "b": 3}).law == (5.0, 3.0, 5.5, 3.0)
    entry = law_entry((5.0, 3.0, 5.5, 3.0))
    forms = {
        "study_fits.json": {"headline": {}, "fits": {"avg@4": {"compute_rollouts": {"optimum": {"n": entry}}}}},
        "fit.json": {"optimum": {"n": entry}},
        "replay.json": {"rollouts_spent": 1, "fits": {"optimum": {"n": entry}}},
        "law.json": entry,
    }
    for name, data in forms.items():
        (tmp_path / name).write_text(json.dumps(data))
        prior = load_prior(str(tmp_path / name))
        assert prior.law == (5.0, 3.0, 5.5, 3.0) and len(prior.replicas) == 3, name
    (tmp_path / "refused.json").write_text(json.dumps({"optimum": {"n": law_entry((1, 1, 1, 1), ok=False)}}))
    with pytest.raises(AdaptiveError, match="refused.json: the law at optimum.n was refused"):
        load_prior(str(tmp_path / "refused.json"))
    with pytest.raises(AdaptiveError, match="neither a file nor one of the paper's laws"):
        load_prior("paper_medium")
    with pytest.raises(AdaptiveError, match=r"lacks \['b'\]"):
        load_prior({"L": 5, "k": 3, "log10_c0": 5.5})
    with pytest.raises(AdaptiveError, match="no avg@4 fit in rollouts"):
        (tmp_path / "tokens.json").write_text(json.dumps({"fits": {"avg@4": {"compute_tokens": {}}}}))
        load_prior(str(tmp_path / "tokens.json"))


def test_the_band_holds_the_law_moved_half_a_decade_and_a_doubling() -> None:
    for compute in (1e4, 1e5, 7e5, 1e6, 1e7):
        value = optimum_curve(np.log10(compute), *EASY.law)
        low, high = EASY.band(compute)
        assert low <= value - SPREAD_DOUBLINGS + 1e-9 and value + SPREAD_DOUBLINGS - 1e-9 <= high
        for shift in (-0.5, 0.5):
            assert low - 1e-9 <= optimum_curve(np.log10(compute) + shift, *EASY.law) - SPREAD_DOUBLINGS
    # A midpoint a decade away leaves it in the transition; so do a flat or falling frontier.
    late = [(c, [int(2 ** round(float(optimum_curve(np.log10(c) - 1.0, *EASY.law))))]) for c in (3e5, 1e6, 3e6)]
    assert contradiction(EASY, fit_of(late, 8)["optimum_points"]) is not None
    near = [(c, [int(2 ** round(float(optimum_curve(np.log10(c) - 0.3, *EASY.law))))]) for c in (3e5, 1e6, 3e6)]
    assert contradiction(EASY, fit_of(near, 8)["optimum_points"]) is None


def test_the_followed_prior_stops_above_its_plateau_and_below_the_frontier_then_resumes_a_guard() -> None:
    steps = dict.fromkeys(ARMS, 20)
    at_start = fit_of([(2e4, [8, 16])], 8)
    record, _ = decide_round(at_start, steps, ARMS, SETTINGS, None, 0, 2e4, EASY, None, 2.0**24)
    stops = {d["n"]: d for d in record["decisions"] if d["action"] == "stop"}
    # The paper's Easy plateau is n* = 2^8.82 = 452: 512 and 1024 lie above it.
    assert set(stops) == {512, 1024} and "above the plateau of paper_easy" in stops[1024]["reason"]
    assert record["prior"]["status"] == "followed" and record["prior"]["stopped"] == [512, 1024]
    # Later the frontier sits at 256 inside the band: 512 becomes its neighbour and resumes; the arms left
    # below stop. If the frontier climbs to 512, 1024 becomes its neighbour and resumes too.
    active = [n for n in ARMS if n < 512]
    # One material point: the data alone do not yet show n* rising (the plain rule's `behind` needs two), the prior does.
    rising = fit_of([(2e6, [256])], 256)
    record, _ = decide_round(rising, steps, active, SETTINGS, None, 4, 2e6, EASY, record, 2.0**24)
    actions = {d["n"]: d["action"] for d in record["decisions"]}
    # 64 is two doublings below 256 but not below the prior's law moved half a decade later (n* >= 45 there).
    assert {n for n, a in actions.items() if a == "stop"} == {8, 16, 32} and actions[512] == "resume"
    assert all(d["numbers"]["rule"] == "prior" for d in record["decisions"] if d["action"] == "stop")
    climbed = fit_of([(2e6, [256]), (8e6, [512])], 512)
    record, _ = decide_round(climbed, steps, [128, 256, 512], SETTINGS, None, 6, 8e6, EASY, record, 2.0**24)
    assert {d["n"]: d["action"] for d in record["decisions"]}[1024] == "resume"


def test_a_contradicted_prior_falls_back_and_resumes_every_arm_it_stopped() -> None:
    steps = dict.fromkeys(ARMS, 20)
    decisions = decide_round(fit_of([(2e4, [8, 16])], 8), steps, ARMS, SETTINGS, None, 0, 2e4, EASY, None, 2.0**24)[0]
    # A flat truth at n = 64 leaves the band at low compute (the prior says 8 there).
    flat = fit_of([(2e4, [8, 16]), (1e5, [64]), (4e5, [64])], 64)
    record, _ = decide_round(flat, steps, [n for n in ARMS if n < 512], SETTINGS, None, 2, 4e5, EASY, decisions, 2.0**24)
    assert record["prior"]["status"] == "fallen back"
    assert record["prior"]["fallback"]["compute"] == 1e5 and "contradicted" in record["prior"]["fallback"]["reason"]
    assert {d["n"] for d in record["decisions"] if d["action"] == "resume"} == {512, 1024}
    # From then on the plain rule decides: the prior stops nothing more.
    again, _ = decide_round(flat, steps, ARMS, SETTINGS, None, 3, 8e5, EASY, record, 2.0**24)
    assert again["prior"]["status"] == "fallen back"
    assert not [d for d in again["decisions"] if d["numbers"].get("rule") == "prior"]


def test_without_a_prior_the_data_s_own_identified_plateau_stops_the_arms_above_it_until_it_moves() -> None:
    steps = dict.fromkeys(ARMS, 20)
    law = law_entry((5.0, 4.0, 5.0, 3.0))  # plateau 2^8 = 256
    fit = fit_of([(1e5, [16]), (1e6, [256]), (4e6, [256])], 256, law)
    decisions, state = above_own_plateau(fit, [], steps, None)
    assert decisions == [] and state is None
    decisions, state = above_own_plateau(fit, decide(fit, steps, ARMS, SETTINGS), steps, None)
    assert {d.n for d in decisions if d.action == "stop" and d.numbers.get("rule") == "plateau"} == {1024}
    assert state == {"stopped": [1024]}
    unsure = fit_of([(1e5, [16]), (1e6, [256]), (4e6, [512])], 512, {"ok": False, "kind": "not_resolved"})
    decisions, state = above_own_plateau(unsure, [], steps, state)
    assert [(d.n, d.action) for d in decisions] == [(1024, "resume")] and state == {"stopped": []}


def test_a_refused_law_s_study_is_a_prior_of_its_material_leaders(tmp_path: Path) -> None:
    """A study whose law was refused (here `noise`) still resolved its leaders at its material points: its band
    is their sets (the simultaneous `band`) within half a decade, widened by a doubling, and nothing elsewhere;
    leaders outside it contradict it; it stops an arm above it only where it covers the range up to C_max, and
    never one below it (no law says n* keeps rising). With no material point it is no prior."""
    points = [
        {"compute": 1e5, "status": {"n": "material"}, "leaders": {"n": [16]}, "band": {"n": [16, 32]}},
        {"compute": 1e6, "status": {"n": "all_lead"}, "leaders": {"n": [8, 16, 32, 64]}, "band": {"n": [8, 16, 32, 64]}},
        {"compute": 4e6, "status": {"n": "material"}, "leaders": {"n": [64]}, "band": {"n": [64, 128]}},
    ]
    fit = {"optimum": {"n": {"ok": False, "kind": "noise"}}, "optimum_points": points}
    (tmp_path / "noise.json").write_text(json.dumps(fit))
    prior = load_prior(str(tmp_path / "noise.json"))
    assert prior.law is None and prior.points == ((5.0, 4.0, 5.0), (np.log10(4e6), 6.0, 7.0)) and "noise" in prior.source
    assert prior.band(2e5) == (3.0, 6.0) and prior.band(1e6) == (-np.inf, np.inf)
    assert prior.band(8e6) == (5.0, 8.0)
    assert contradiction(prior, fit_of([(1e5, [128])], 128)["optimum_points"])["leaders"] == [128]
    assert contradiction(prior, fit_of([(1e6, [1024])], 1024)["optimum_points"]) is None  # no point near 1e6
    assert prior_stop(prior, 512, 2e6, 8e6, [64]) is not None and prior_stop(prior, 128, 2e6, 8e6, [64]) is None
    assert prior_stop(prior, 512, 2e6, 1e8, [64]) is None  # nothing near C_max = 1e8: it cannot say
    assert prior_stop(prior, 8, 4e6, 8e6, [64]) is None  # below it: no law, no stop
    assert Prior.from_params(prior.to_params()) == prior and planned_reach(prior, ARMS, [1e5, 1e6, 8e6]) == dict.fromkeys(ARMS, 8e6)
    assert set(EASY.to_params()) == {"source", "law", "replicas"}  # a law prior's params as before
    fit["optimum_points"] = [points[1]]
    (tmp_path / "nothing.json").write_text(json.dumps(fit))
    with pytest.raises(AdaptiveError, match="no compute point's leaders are material: it is no prior"):
        load_prior(str(tmp_path / "nothing.json"))


def test_the_plan_from_the_paper_law_runs_the_plateau_s_arms_to_c_max_and_stops_the_small_ones_early() -> None:
    caps = rung_caps(2.0**14, 2.0**24, 2.0)
    reach = planned_reach(EASY, ARMS, caps)
    top = 2 ** optimum_curve(np.log10(caps[-1]), *EASY.law)
    for n in ARMS:
        if abs(np.log2(n / top)) <= 1.5:
            assert reach[n] == caps[-1], n
    assert reach[8] < reach[16] <= reach[32] < caps[-1]


# Known truth in pairs: slow (a fit of A and two replays of B per pair and seed), a CI step of its own.
@pytest.fixture(scope="module")
def pairs() -> dict[tuple[str, int], dict[str, Any]]:
    return run_pairs([*SHIFTED, *MISMATCHED, *REFUSED], (0, 1, 2))


@pytest.fixture(scope="module")
def realistic() -> dict[tuple[str, int], dict[str, Any]]:
    """Every realistic table replayed without a prior on seeds 0-2, on every core."""
    return run_plain(list(REALISTIC), (0, 1, 2))


# What the pairs reached once the fits read the arms the sweep's rule stopped as settled, not censored
# (docs/log/adaptive-prior.md, 2026-12-06, "Stopped arms settled"): 27-52 % per pair-seed, mean 41 %, at most
# 0.78 of today's spend, B's law within a factor 2 at >= 95 % of its points on all 18. Asserted with a little
# room, so that the loss the censored reading caused (`constant` on every shared-grid pair-seed) fails.
SHIFTED_SHARE = 0.55
SHIFTED_MEAN_SHARE = 0.49
SHIFTED_RATIO = 0.80
SHIFTED_MEAN_RATIO = 0.78
REALISTIC_SHARE = 0.65
# With the lower guard left behind (`guard_behind`, 2026-12-07) the 18 shifted pair-seeds spent 38.5 % on the mean
# (42.6 % without it) and the nine realistic draws 49.1 % (52.0 % without it; docs/log/adaptive-prior.md, "The plan's
# shares again"): bounds between the two, so that losing the part's saving fails while a draw's own noise does not.
SHIFTED_ALL_MEAN_SHARE = 0.40
REALISTIC_MEAN_SHARE = 0.505


@pytest.mark.heavy
@pytest.mark.parametrize("name", SHIFTED)
def test_a_shifted_pair_spends_less_than_today_and_keeps_b_s_law(pairs: dict, name: str) -> None:
    """With A's law as the prior, followed to the end, B's sweep spends at most `SHIFTED_SHARE` of the grid and
    `SHIFTED_RATIO` of today's rule on every seed (`SHIFTED_MEAN_SHARE`, `SHIFTED_MEAN_RATIO` over the seeds),
    and the kept data report B's law, within a factor 2 of B's truth at 90 % of the points, on every seed: the
    arms the prior and the rules stopped are settled, so the points beyond their stops stay evidence."""
    shares, ratios = [], []
    for seed in (0, 1, 2):
        result = pairs[(name, seed)]
        with_prior, today = result["with"], result["plain"]
        shares.append(with_prior["share_of_full_grid"])
        ratios.append(with_prior["rollouts_spent"] / today["rollouts_spent"])
        print(f"{name} seed {seed}: {shares[-1]:.1%} with the prior, {today['share_of_full_grid']:.1%} by today's rule")
        assert with_prior["prior"]["status"] == "followed", (name, seed)
        assert shares[-1] <= SHIFTED_SHARE and ratios[-1] <= SHIFTED_RATIO, (name, seed)
        recovered = recovery(PAIRS[name].b, with_prior["fits"])
        assert recovered is not None and recovered >= 0.9, (name, seed, with_prior["fits"]["optimum"]["n"].get("kind"))
    assert np.mean(shares) <= SHIFTED_MEAN_SHARE and np.mean(ratios) <= SHIFTED_MEAN_RATIO, (name, shares, ratios)


@pytest.mark.heavy
def test_the_shifted_pairs_together_spend_what_the_lower_guard_left_behind_saves(pairs: dict) -> None:
    """Over every shifted pair and seed, with the prior followed, B's sweep spends at most `SHIFTED_ALL_MEAN_SHARE`
    of the grid on the mean: the lower guard a rising frontier left behind stops (`guard_behind`), which the
    per-pair bounds above, set by the pair it never touches (`later`), would not notice."""
    shares = [pairs[(name, seed)]["with"]["share_of_full_grid"] for name in SHIFTED for seed in (0, 1, 2)]
    print(f"shifted pairs: mean {np.mean(shares):.1%} over {len(shares)} pair-seeds")
    assert np.mean(shares) <= SHIFTED_ALL_MEAN_SHARE, shares


@pytest.mark.heavy
@pytest.mark.parametrize("name", MISMATCHED)
def test_a_mismatched_pair_reports_no_law_b_s_truth_contradicts(pairs: dict, name: str) -> None:
    """A prior B's truth contradicts gives B no false law: where the kept data report one it recovers B's own
    truth. A falling B and a plateau three doublings below A's contradict the prior and fall back on every
    seed; a flat B has no material point to contradict it with, so the sweep follows it and the kept data
    report no law."""
    for seed in (0, 1, 2):
        result = pairs[(name, seed)]
        law = result["with"]["fits"]["optimum"]["n"]
        share = recovery(PAIRS[name].b, result["with"]["fits"])
        print(f"{name} seed {seed}: {result['with']['share_of_full_grid']:.0%} with the prior, "
              f"{result['plain']['share_of_full_grid']:.0%} by today's rule; prior {result['with']['prior']['status']}")
        assert share is None or share >= 0.8, (name, seed, law)
        if name == "flat":
            assert not law["ok"], (name, seed, law)
        else:
            assert result["with"]["prior"]["status"] == "fallen back", (name, seed)


@pytest.mark.heavy
@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_law_s_leaders_guide_b_s_sweep_for_no_more_than_today(pairs: dict, name: str) -> None:
    """A refused A (`close_not_monotone`, `noise` on every seed) is a leaders prior, followed on every seed; B's
    sweep never spends more than today's rule, and the rising B keeps its law (measured 95-100 %). The
    not-monotone B's kept data report a law on seeds 0 and 2, as they do without a prior: not asserted
    (docs/log/adaptive-prior.md, "A refused law as a prior")."""
    for seed in (0, 1, 2):
        result = pairs[(name, seed)]
        with_prior, today = result["with"], result["plain"]
        assert result["prior"].law is None and with_prior["prior"]["status"] == "followed", (name, seed)
        assert with_prior["rollouts_spent"] <= today["rollouts_spent"], (name, seed)
        if name == "refused_rising":
            recovered = recovery(PAIRS[name].b, with_prior["fits"])
            assert recovered is not None and recovered >= 0.9, (name, seed)


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(REALISTIC))
def test_without_a_prior_a_realistic_table_spends_under_its_bound_and_keeps_its_law(
    realistic: dict, name: str
) -> None:
    """Without a prior a realistic table spends at most `REALISTIC_SHARE` of its grid (measured 38-60 %, mean
    49 %, with stopped arms settled and the lower guard left behind stopped) and its kept law is within a factor 2 of the truth at 90 % of the points on
    every seed (measured: identified at >= 95 % on all nine)."""
    for seed in (0, 1, 2):
        result = realistic[(name, seed)]
        assert result["share_of_full_grid"] <= REALISTIC_SHARE, (name, seed)
        recovered = recovery(REALISTIC[name], result["fits"])
        assert recovered is not None and recovered >= 0.9, (name, seed, result["fits"]["optimum"]["n"].get("kind"))


@pytest.mark.heavy
def test_without_a_prior_the_realistic_tables_together_spend_under_their_mean_bound(realistic: dict) -> None:
    """Over the nine realistic draws the rule spends at most `REALISTIC_MEAN_SHARE` of the grid on the mean
    (measured 49.1 %, the figure `isocompute plan` takes as its stand-in, `plan.requests.MEASURED_SHARES`)."""
    shares = [realistic[(name, seed)]["share_of_full_grid"] for name in REALISTIC for seed in (0, 1, 2)]
    print(f"realistic tables: mean {np.mean(shares):.1%} over {len(shares)} draws")
    assert np.mean(shares) <= REALISTIC_MEAN_SHARE, shares


def test_a_resumed_arm_trains_the_rungs_it_missed_at_the_next_one() -> None:
    """The workflow's rounds: an arm stopped at round 0 and resumed at round 2 reaches rung 3 next, and its run's
    rung files (the ones the round after reads) are every rung it trains, the missed ones included."""
    rung_steps = {2: [4, 8, 16, 32], 4: [2, 4, 8, 16], 8: [1, 2, 4, 8]}
    stop = {"n": 8, "action": "stop", "reason": "prior", "numbers": {"rule": "prior"}}
    stopped = round_state({"round": 0, "decisions": [stop, {"n": 2, "action": "extend"}, {"n": 4, "action": "extend"}]},
                          reached_rungs(sorted(rung_steps), None, 0), rung_steps)  # fmt: skip
    assert stopped["arms"]["8"] == {"rung": 0, "steps": 1, "active": False, "stopped": {"round": 0, "rule": "prior", "reason": "prior"}}
    held = round_state({"round": 1, "decisions": [{"n": 2, "action": "extend"}, {"n": 4, "action": "extend"}]},
                       reached_rungs(sorted(rung_steps), stopped, 1), rung_steps, stopped)  # fmt: skip
    assert held["arms"]["8"]["stopped"]["round"] == 0
    resumed = round_state({"round": 2, "decisions": [{"n": 2, "action": "extend"}, {"n": 4, "action": "extend"}, {"n": 8, "action": "resume"}]},
                          reached_rungs(sorted(rung_steps), held, 2), rung_steps, held)  # fmt: skip
    assert resumed["arms"]["8"] == {"rung": 0, "steps": 1, "active": True}
    reached = reached_rungs(sorted(rung_steps), resumed, 3)
    assert reached[8] == 3 and trained_rungs(rung_steps[8], reached[8]) == [0, 1, 2, 3]


def test_at_the_last_decision_a_late_resume_is_held_and_its_arm_read_as_censored() -> None:
    """The `last_resume` part and its pilot V1 (`decisions.held_at_last`): the plateau part stops 1024 above the data's own
    plateau, and resumes it once the law is no longer identified. At the last decision (only the grid's last rung,
    C_max, left) that resume would buy its whole remaining run: with the part it is held, and its stop becomes
    `last_resume`, censored (not settled) in the fits; before the last decision, for a guard, or without the part,
    it resumes as on main. V2 (`last_resume`) holds a contradicted prior's fallback resume too, V1 not."""
    steps, c_max = dict.fromkeys(ARMS, 20), 2.0**24
    law = law_entry((5.0, 4.0, 5.0, 3.0))  # plateau 2^8 = 256
    stopped, _ = decide_round(fit_of([(1e5, [16]), (1e6, [256]), (4e6, [256])], 256, law), steps, ARMS, SETTINGS, None,
                              6, c_max / 4, rules=RULES, compute_max=c_max)  # fmt: skip
    assert {d["n"]: d["action"] for d in stopped["decisions"]}[1024] == "stop" and stopped["plateau"] == {"stopped": [1024]}
    unsure = fit_of([(1e5, [16]), (1e6, [256]), (4e6, [256])], 256, {"ok": False, "kind": "not_resolved"})
    active = [n for n in ARMS if n != 1024]

    def late(fit: dict[str, Any], rules: tuple[str, ...], cap: float = c_max / 2) -> dict[str, Any]:
        return decide_round(fit, steps, active, SETTINGS, None, 7, cap, None, stopped, c_max, rules)[0]

    without = tuple(rule for rule in RULES if rule != "last_resume")
    assert {d["n"]: d["action"] for d in late(unsure, without)["decisions"]}[1024] == "resume"
    assert {d["n"]: d["action"] for d in late(unsure, RULES, c_max / 4)["decisions"]}[1024] == "resume"
    for pilot in ("last_resume", "last_resume_plateau"):
        record = late(unsure, (*without, pilot))
        held = {d["n"]: d for d in record["decisions"]}[1024]
        assert held["action"] == "hold" and held["numbers"]["rule"] == "last_resume" and "last decision" in held["reason"]
    # A guard (2 n* once n* is 512) resumes even at the last decision.
    guard = fit_of([(1e5, [16]), (1e6, [256]), (4e6, [512])], 512, {"ok": False, "kind": "not_resolved"})
    assert {d["n"]: d["action"] for d in late(guard, RULES)["decisions"]}[1024] == "resume"
    # The workflow's state keeps the held arm stopped (its stop's round kept), and the fits read it censored.
    state = round_state(stopped, dict.fromkeys(ARMS, 6), {n: [20] * 9 for n in ARMS})
    assert state["arms"]["1024"]["stopped"]["rule"] == "plateau"
    record = late(unsure, RULES)
    held = {d["n"]: d for d in record["decisions"]}[1024]
    after = round_state(record, reached_rungs(ARMS, state, 7), {n: [20] * 9 for n in ARMS}, state)
    assert after["arms"]["1024"]["active"] is False
    assert after["arms"]["1024"]["stopped"] == {"round": 6, "rule": "last_resume", "reason": held["reason"]}
    evals = pd.DataFrame({"n": [1024, 512], "compute_rollouts": [1e5, 1e6]})
    assert (1024,) in settled_of_rounds(state, evals) and (1024,) not in settled_of_rounds(after, evals)
    # A contradicted prior's fallback at the last decision: V2 holds the arms it stopped, V1 resumes them.
    prior_steps = decide_round(fit_of([(2e4, [8, 16])], 8), steps, ARMS, SETTINGS, None, 0, 2e4, EASY, None, c_max)[0]
    flat = fit_of([(2e4, [8, 16]), (1e5, [64]), (4e5, [64])], 64)
    for pilot, action in (("last_resume", "hold"), ("last_resume_plateau", "resume")):
        record, _ = decide_round(flat, steps, [n for n in ARMS if n < 512], SETTINGS, None, 7, c_max / 2, EASY, prior_steps,
                                 c_max, (*without, pilot))  # fmt: skip
        assert {d["n"]: d["action"] for d in record["decisions"] if d["n"] >= 512} == {512: action, 1024: action}
