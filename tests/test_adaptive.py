"""The adaptive sweep: it stops only arms confidently below the frontier over their whole remaining range,
never the frontier's arm or its neighbours nor a curve whose ceiling its data leave open, and on a known
truth it spends less than the full grid for the same law. Adaptive sweeps that cannot decide are refused
at config time.
`python tests/adaptive_truth.py` prints the replay figures of every scenario."""

import copy
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from adaptive_truth import agreement, full_verdict, options, redraw, verdict_kind
from conftest import REPO
from known_truth import SCENARIOS, K, draw, recovery

from isocompute.adaptive.decisions import (
    BEHIND_DOUBLINGS,
    REWARD_MAX,
    TIE_FROM,
    Decision,
    ceiling_bound,
    decide,
    last_material,
    replay,
    rising_in_data,
    round_state,
    settled_arms,
    settled_of_rounds,
    stopped_after,
)
from isocompute.adaptive.extrapolation import SEEN_FROM
from isocompute.adaptive.rungs import (
    PILOT_RULES,
    RULES,
    AdaptiveError,
    AdaptiveSettings,
    reached_rungs,
    rung_caps,
    trained_rungs,
)
from isocompute.cli import main
from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.leaders import DEFAULT_TOLERANCE
from isocompute.fits.study_fit import fit_study
from isocompute.pipeline.config import ConfigError, adaptive_prior, check_config, validate_config
from isocompute.sampling.metrics import summarize_counts

BOOTSTRAP = 10
SETTINGS = AdaptiveSettings(rung_factor=4.0, min_steps=10, audit_rungs=1)
PAPER = SCENARIOS["paper_easy_law"]


@pytest.fixture(scope="module")
def paper() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, float]:
    evals, counts, base = draw(PAPER, 0)
    return evals, counts, base, summarize_counts(base["n_correct"], K)["avg@4"]


def fit_of(paper: tuple, arms: set[int], cap: float) -> dict:
    """The study fit of the draw's arms `arms` up to compute `cap`, bootstrapped as an adaptive sweep's decision is."""
    evals, counts, base, base_reward = paper
    keep = lambda table: table[table["n"].isin(arms) & (table["compute_rollouts"] <= cap)]
    replicas = resample_evals(keep(counts), K, BOOTSTRAP, 0, ("n",), base)
    return fit_study(keep(evals), options(base_reward), replicas=replicas)


def reached_steps(paper: tuple, arms: set[int], cap: float) -> dict[int, int]:
    evals = paper[0]
    seen = evals[evals["n"].isin(arms) & (evals["compute_rollouts"] <= cap)]
    return {int(n): int(group["step"].max()) for n, group in seen.groupby("n")}


def test_an_arm_the_rule_stopped_is_settled_beyond_its_stop_where_a_run_that_ended_is_censored(paper: tuple) -> None:
    """The paper-like truth with its largest arm (n = 512) cut at 1e5 rollouts, as the plateau rule or a prior
    stops an arm above the plateau: read as a run that ended, it may lead beyond its stop, those points are
    `censored` (no evidence) and the law is lost; told that the rule stopped it (settled), it is no candidate
    there, the points say why, none is censored, and the law is back."""
    evals, counts, base, base_reward = paper
    largest = int(evals["n"].max())

    def cut(table: pd.DataFrame) -> pd.DataFrame:
        return table[(table["n"] != largest) | (table["compute_rollouts"] <= 1e5)]

    replicas = resample_evals(cut(counts), K, BOOTSTRAP, 0, ("n",), base)
    ended = fit_study(cut(evals), options(base_reward), replicas=replicas)
    reached = float(cut(evals).query("n == @largest")["compute_rollouts"].max())
    stopped = {largest: {"rule": "plateau", "reason": "above the plateau of the data's own law so far"}}
    settled = fit_study(cut(evals), options(base_reward), replicas=replicas, settled=settled_arms(stopped, {largest: reached}))
    censored = [i for i, row in enumerate(ended["optimum_points"]) if row["status"]["n"] == "censored"]
    assert censored and all(f"n = {largest}, measured only" in ended["optimum_points"][i]["tie_reason"]["n"] for i in censored)
    assert not ended["optimum"]["n"]["ok"]
    for i in censored:
        row = settled["optimum_points"][i]
        assert row["status"]["n"] != "censored" and largest not in row["leaders"]["n"], row
        why = f"n = {largest}: stopped by the sweep's rule 'plateau' at C = {reached:.4g} rollouts, judged behind beyond it"
        assert row["settled"] == [f"{why}: no candidate here"]
    curve = next(c for c in settled["curves"] if c["key"]["n"] == largest)
    assert curve["settled"]["rule"] == "plateau" and "keeps its plateau below it" in curve["settled"]["reason"]
    assert settled["optimum"]["n"]["ok"], settled["optimum"]["n"]


def test_the_frontiers_arm_and_its_neighbours_continue_even_when_far_below(paper: tuple) -> None:
    """With n = 4, 8, 16 to C = 1e6, n = 16 owns the frontier; n = 8's ceiling (about 0.25) lies far under
    it, yet as the frontier arm's neighbour it continues, while n = 4 (ceiling 0.2, seen past `min_steps` at the
    look before: no young arm) stops."""
    arms = {4, 8, 16}
    fit = fit_of(paper, arms, 1e6)
    seen = {"decisions": [asdict(Decision(4, "extend", "an earlier rung", {"steps": SETTINGS.min_steps}))]}
    decisions = {d.n: d for d in decide(fit, reached_steps(paper, arms, 1e6), sorted(arms), SETTINGS, previous=seen)}
    assert fit["optimum_at_max_compute"]["n"] == 16
    assert decisions[16].action == "extend" and "the frontier's arm" in decisions[16].reason
    assert decisions[8].action == "extend" and "neighbour" in decisions[8].reason
    assert decisions[8].numbers["margin"] > 0, decisions[8].numbers  # the band test alone would have stopped it
    assert decisions[4].action == "stop" and decisions[4].numbers["upper"] < decisions[4].numbers["frontier_low"]


def test_the_bound_stops_an_arm_only_at_a_second_look_in_a_row(paper: tuple) -> None:
    """With `second_look`, n = 4 (its identified ceiling under the frontier at C = 1e6, which the bound alone
    stops) runs on at its first look; a round later, its bound below the frontier at the look before too, it
    stops; where the look before did not bound it below the frontier (a ceiling not identified then), it runs
    on again: a ceiling fitted to a curve's first points must hold for a rung before it ends the arm."""
    arms = {4, 8, 16}
    fit = fit_of(paper, arms, 1e6)
    # Without `guard_behind`: at the second look it would stop the lower guard n = 8, which a rising n* has left
    # behind here (its own test below); this test's guard is the neighbour that always runs.
    steps = reached_steps(paper, arms, 1e6)
    rules = (*(rule for rule in RULES if rule != "guard_behind"), "second_look")
    first = {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules)}
    assert first[4].action == "extend" and "at this look only" in first[4].reason, first[4]
    assert first[4].numbers["upper"] < first[4].numbers["frontier_low"]
    looked = {"decisions": [asdict(d) for d in first.values()]}
    second = {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules, looked)}
    assert second[4].action == "stop" and "confidently below the frontier" in second[4].reason
    assert second[8].action == "extend" and "neighbour" in second[8].reason
    open_before = {"decisions": [{**asdict(first[4]), "numbers": {**first[4].numbers, "upper": REWARD_MAX}}]}
    again = {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules, open_before)}
    assert again[4].action == "extend" and "at this look only" in again[4].reason


def test_the_bound_asks_a_second_look_only_of_a_young_arm(paper: tuple) -> None:
    """By the rule (`young_look`), n = 4 (its identified ceiling under the frontier at C = 1e6) runs on where this is its
    first look past `min_steps` (no look before, or the look before had it under `min_steps`, so no bound); where
    the look before had it past `min_steps`, its ceiling rests on more than one rung and the bound stops it at
    this look, as where the bound held at the look before: only a ceiling fitted to a first rung's short rise
    waits for a second look; without the part the bound stops it at its first look."""
    arms = {4, 8, 16}
    fit = fit_of(paper, arms, 1e6)
    steps, rules = reached_steps(paper, arms, 1e6), RULES
    without = tuple(rule for rule in RULES if rule != "young_look")
    assert {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, without)}[4].action == "stop"
    first = {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules)}
    assert first[4].action == "extend" and "at this look only" in first[4].reason, first[4]
    assert first[4].numbers["upper"] < first[4].numbers["frontier_low"]
    young = {"decisions": [asdict(Decision(4, "extend", "under min_steps", {"steps": SETTINGS.min_steps - 1}))]}
    assert {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules, young)}[4].action == "extend"
    older = {"decisions": [asdict(Decision(4, "extend", "open", {"steps": SETTINGS.min_steps, "upper": REWARD_MAX}))]}
    stopped = {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules, older)}
    assert stopped[4].action == "stop" and "confidently below the frontier" in stopped[4].reason
    held = {"decisions": [asdict(d) for d in first.values()]}
    assert {d.n: d for d in decide(fit, steps, sorted(arms), SETTINGS, rules, held)}[4].action == "stop"


def test_the_lower_guard_left_behind_a_rising_frontier_stops_at_a_second_look_with_guard_behind(paper: tuple) -> None:
    """Every arm to C = 1e6: n* rises on the data and n* = 64 leads alone at the last material point, so the lower
    guard n = 32 lies below every leader. With the `guard_behind` part it runs on at its first such look and stops
    where the look before placed it below every leader too (rule `guard_behind`, settled on behind's assumption);
    where the look before did not, and without the part, it runs on as a guard; n* and 2 n* always run on."""
    arms = {4, 8, 16, 32, 64, 128, 256, 512}
    fit = fit_of(paper, arms, 1e6)
    steps = reached_steps(paper, arms, 1e6)
    active = [32, 64, 128]
    assert fit["optimum_at_max_compute"]["n"] == 64 and min(last_material(fit)["leaders"]["n"]) > 32
    assert rising_in_data(fit) and steps[32] >= SETTINGS.min_steps
    rules = RULES
    first = {d.n: d for d in decide(fit, steps, active, SETTINGS, rules)}
    assert first[32].action == "extend" and "neighbour" in first[32].reason and first[32].numbers["below_leaders"]
    looked = {"decisions": [asdict(d) for d in first.values()]}
    second = {d.n: d for d in decide(fit, steps, active, SETTINGS, rules, looked)}
    assert second[32].action == "stop" and second[32].numbers["rule"] == "guard_behind", second[32]
    assert second[64].action == "extend" and second[128].action == "extend"
    assert not second[64].numbers["below_leaders"]
    tied_before = {"decisions": [{**asdict(first[32]), "numbers": {**first[32].numbers, "below_leaders": False}}]}
    assert {d.n: d for d in decide(fit, steps, active, SETTINGS, rules, tied_before)}[32].action == "extend"
    without = tuple(rule for rule in RULES if rule != "guard_behind")
    assert {d.n: d for d in decide(fit, steps, active, SETTINGS, without, looked)}[32].action == "extend"
    stopped = {32: {"rule": "guard_behind", "reason": second[32].reason}}
    assert "n* rises as the data showed" in settled_arms(stopped, {32: 1e6})[(32,)].reason
    assert "guard_behind" in RULES and "guard_behind" not in PILOT_RULES


def test_an_unsaturated_curve_stays_a_candidate(paper: tuple) -> None:
    """At C = 4e5 the large n are still rising: their ceilings are not identified, so nothing bounds their
    future below the metric's maximum and none of them stops, whatever its fitted ceiling says."""
    arms = set(PAPER.curves)
    fit = fit_of(paper, arms, 4e5)
    rising = [c for c in fit["curves"] if any(flag.startswith("A not identified") for flag in c["flags"])]
    assert 256 in {c["key"]["n"] for c in rising} and len(rising) >= 3
    for curve in rising:
        assert ceiling_bound(curve, BOOTSTRAP)[0] == REWARD_MAX
    decisions = {d.n: d for d in decide(fit, reached_steps(paper, arms, 4e5), sorted(arms), SETTINGS)}
    assert all(decisions[c["key"]["n"]].action == "extend" for c in rising)
    saturated = next(c for c in fit["curves"] if c["key"]["n"] == 8)
    bound, why = ceiling_bound(saturated, BOOTSTRAP)
    measured = [row["avg@4"] for row in fit["measured"] if row["n"] == 8]
    assert max(measured[-3:]) < bound < REWARD_MAX, why


@pytest.fixture(scope="module")
def replayed(paper: tuple) -> tuple[dict, dict]:
    evals, counts, base, base_reward = paper
    adaptive = replay(evals, counts, options(base_reward), K, BOOTSTRAP, 0, SETTINGS, base)
    full = fit_study(evals, options(base_reward), replicas=resample_evals(counts, K, BOOTSTRAP, 0, ("n",), base))
    return adaptive, full


def test_replay_spends_less_than_the_full_grid_and_keeps_the_law(replayed: tuple) -> None:
    adaptive, full = replayed
    print(f"paper-like seed 0: {adaptive['share_of_full_grid']:.0%} of the full grid's rollouts")
    assert adaptive["rollouts_spent"] < adaptive["rollouts_full_grid"]
    assert adaptive["share_of_full_grid"] == pytest.approx(sum(a["compute_reached"] for a in adaptive["arms"]) / adaptive["rollouts_full_grid"])
    assert any("stopped" in arm for arm in adaptive["arms"])
    assert adaptive["fits"]["optimum"]["n"]["ok"] == full["optimum"]["n"]["ok"]
    assert agreement(full, adaptive["fits"]) >= 0.8
    if full["optimum"]["n"]["ok"]:
        assert recovery(PAPER, adaptive["fits"]) >= 0.8
    json.dumps(adaptive)  # the replay is plain JSON


def test_replay_decisions_follow_the_rule(replayed: tuple) -> None:
    """Every decision saw only what its rung allowed; no stop of the frontier's arm, nor of its neighbours but by
    the forecast; a bound's stop after min_steps and with a bound under the frontier's lower edge, a behind stop
    two doublings or more below the leaders, a plateau stop only on an identified law, a forecast's from half
    the run with its upper edge under the frontier's lower edge by the tolerance, a tie's from `TIE_FROM` of the
    run with its forecast meeting the frontier's arm's widened by the tolerance, never a guard's; the audit arm ran
    past its stop."""
    adaptive, _ = replayed
    arms = sorted(a["n"] for a in adaptive["arms"])
    rules = set()
    for round_ in adaptive["rounds"]:
        guarded = {n for n in arms if round_["n_top"] is not None and n in (round_["n_top"], *neighbours(arms, round_["n_top"]))}
        assert round_["frontier_top"]["compute"] <= round_["cap"] * 10**0.05
        for decision in round_["decisions"]:
            if decision["action"] == "stop":
                numbers = decision["numbers"]
                rule = numbers.get("rule", "bound")
                rules.add(rule)
                assert decision["n"] != round_["n_top"]
                assert decision["n"] not in guarded or rule == "extrapolate"
                if rule == "bound":
                    assert numbers["steps"] >= SETTINGS.min_steps
                    assert numbers["upper"] < numbers["frontier_low"] and numbers["upper"] < REWARD_MAX
                elif rule == "behind":
                    assert numbers["steps"] >= SETTINGS.min_steps and numbers["doublings_below"] >= BEHIND_DOUBLINGS
                elif rule == "extrapolate":
                    assert numbers["steps"] >= SETTINGS.min_steps and numbers["seen"] >= SEEN_FROM
                    assert numbers["forecast_upper"] < numbers["frontier_low"] - DEFAULT_TOLERANCE
                elif rule == "tie":
                    assert decision["n"] not in guarded and numbers["steps"] >= SETTINGS.min_steps
                    assert numbers["seen"] >= TIE_FROM
                    low, high = numbers["frontier_forecast"]
                    assert numbers["forecast"][1] >= low - DEFAULT_TOLERANCE and numbers["forecast"][0] <= high + DEFAULT_TOLERANCE
                else:
                    assert rule == "plateau" and round_["law"]["identified"] == "identified"
    assert rules, "the paper-like truth stops arms"
    audit = adaptive["audit"]
    assert audit is not None and audit["rounds"][0]["rule"]["action"] == "stop"
    audited = next(a for a in adaptive["arms"] if a["n"] == audit["n"])
    assert audited["compute_reached"] > audit["stopped_cap"] * 10**0.05


def neighbours(arms: list[int], n: int) -> list[int]:
    at = arms.index(n)
    return arms[max(at - 1, 0) : at] + arms[at + 1 : at + 2]


def test_the_full_grids_own_disagreement_refits_the_draw_as_the_replay_does() -> None:
    """The yardstick of "the adaptive sweep's verdict differs from the full grid's": the full grid's verdict on bootstrap
    replicas of the draw. Recomputed from the counts the draw gets its own verdict back (so the rate measures
    the resampling, nothing else), and a replica is whole problems drawn with replacement, each copy with the
    same counts at every checkpoint and in the base model."""
    evals, counts, base = draw(SCENARIOS["shared_grid_two_levels"], 0)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    fit = fit_study(evals, options(base_reward), replicas=resample_evals(counts, K, BOOTSTRAP, 0, ("n",), base))
    assert full_verdict(counts, base, BOOTSTRAP, 0) == verdict_kind(fit) == "law"  # a step: two levels and where, slope not identified
    copy_counts, copy_base = redraw(counts, base, np.random.default_rng(0))
    assert len(copy_counts) == len(counts) and copy_counts["id"].nunique() == copy_base["id"].nunique() == 300
    first = copy_counts[copy_counts["id"] == copy_base["id"].iloc[0]]
    source = counts.merge(first[["run", "step", "n_correct"]], on=["run", "step", "n_correct"])
    assert len(first) == counts[["run", "step"]].drop_duplicates().shape[0]
    assert source.groupby("id").size().max() == len(first)  # one original problem holds every count of the copy


def test_replay_refuses_what_it_cannot_decide(paper: tuple) -> None:
    evals, counts, base, base_reward = paper
    two = evals[evals["n"].isin([4, 8])]
    with pytest.raises(AdaptiveError, match="at least three"):
        replay(two, counts, options(base_reward), K, BOOTSTRAP, 0, SETTINGS, base)
    with pytest.raises(AdaptiveError, match="leaves 1 rung"):
        replay(evals, counts, options(base_reward), K, BOOTSTRAP, 0, AdaptiveSettings(rung_factor=1e5), base)
    with pytest.raises(AdaptiveError, match="bootstrap"):
        replay(evals, counts, options(base_reward), K, 0, 0, SETTINGS, base)


@pytest.mark.parametrize(("name", "verdict"), [("paper_easy_law", "law"), ("constant", "constant")])
def test_replay_without_counts_draws_each_curves_residuals(name: str, verdict: str) -> None:
    """A tracker's log keeps no per-problem counts: every decision's bands come from the residual bootstrap
    `isocompute fit` draws without them, which the replay records; on the known truth it still keeps the full
    grid's verdict (the same fit, residuals redrawn), and where n* moves it spends less and recovers the
    law."""
    scenario = SCENARIOS[name]
    evals, _, base = draw(scenario, 0)
    base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
    adaptive = replay(evals, None, options(base_reward), K, BOOTSTRAP, 0, SETTINGS)
    full = fit_study(evals, options(base_reward), resamples=BOOTSTRAP, seed=0)
    print(f"{name} without counts: {adaptive['share_of_full_grid']:.0%} of the full grid's rollouts")
    bands = "residual bootstrap of each curve, no per-problem counts"
    assert adaptive["bootstrap"] == {"kind": "residuals", "resamples": BOOTSTRAP, "bands": bands}
    assert adaptive["fits"]["bootstrap"]["kind"] == "residuals"
    assert adaptive["fits"]["bootstrap"]["resamples"] == BOOTSTRAP
    assert all("reward_low" in row for row in adaptive["fits"]["frontier"])
    assert verdict_kind(adaptive["fits"]) == verdict_kind(full) == verdict
    assert adaptive["rollouts_spent"] <= adaptive["rollouts_full_grid"]
    if verdict == "law":
        assert adaptive["share_of_full_grid"] < 0.8 and any("stopped" in arm for arm in adaptive["arms"])
        assert agreement(full, adaptive["fits"]) >= 0.8 and recovery(scenario, adaptive["fits"]) >= 0.8
    with pytest.raises(AdaptiveError, match="give both"):
        replay(evals, None, options(base_reward), K, BOOTSTRAP, 0, SETTINGS, base)


def test_rungs_are_anchored_at_the_top_of_the_grid() -> None:
    assert rung_caps(512, 65536, 4) == [1024.0, 4096.0, 16384.0, 65536.0]
    assert rung_caps(512, 65536, 200) == [65536.0]


DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def adaptive(**changes: object) -> dict:
    config = copy.deepcopy(DEFAULT)
    config["sweep"] = {"mode": "adaptive", "rung_factor": 4, "min_steps": 10, "audit_rungs": 1}
    config["studies"] = {"fixed_b_problem": [16], "fixed_batch": [], "joint": False}
    for path, value in changes.items():
        section, key = path.split("__")
        config[section][key] = value
    return config


def test_an_adaptive_sweep_on_the_default_study_is_accepted() -> None:
    config = adaptive()
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    check_config(config)


@pytest.mark.parametrize(("changes", "message"), [
    ({"fits__bootstrap": 0}, r"sweep.mode=adaptive needs fits.bootstrap > 0"),
    ({"sweep__rung_factor": 200}, r"sweep.rung_factor=200 leaves 1 rung from training.compute_min=512"),
])  # fmt: skip
def test_an_adaptive_sweep_that_cannot_decide_is_refused_with_the_key(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_config(adaptive(**changes))


def test_an_adaptive_study_of_two_arms_is_refused() -> None:
    config = adaptive()
    config["grid"] = [{**config["grid"][0], "n": [4, 8]}]
    config["studies"] = {"fixed_b_problem": [16]}
    with pytest.raises(ConfigError, match=r"has 2 arm\(s\) \(n = \[4, 8\]\); it needs at least three"):
        check_config(config)


@pytest.mark.parametrize(("studies", "message"), [
    ({"fixed_batch": [128]}, r"the fixed_batch study batch128 on easy shares runs .* \(studies.fixed_batch\)"),
    ({"joint": True}, r"the joint study joint on easy shares runs .* \(studies.joint\)"),
])  # fmt: skip
def test_a_study_over_the_adaptive_arms_is_refused(studies: dict, message: str) -> None:
    """Its frontier would be fitted on curves cut where the adaptive sweep stopped them."""
    config = adaptive()
    config["studies"].update(studies)
    with pytest.raises(ConfigError, match=message):
        check_config(config)


@pytest.mark.parametrize(("key", "value"), [("rungs", 3), ("prior", {"L": 4.0, "k": 3.0})])
def test_the_schema_refuses_an_unknown_sweep_key_and_a_law_without_its_four_numbers(key: str, value: object) -> None:
    config = adaptive()
    config["sweep"][key] = value
    with pytest.raises(ConfigError, match=key):
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml")


def test_cli_replay_writes_the_replay_and_refuses_a_table_without_counts_columns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    evals, counts, base = draw(SCENARIOS["two_levels"], 0)
    evals.to_csv(tmp_path / "evals.csv", index=False)
    counts.to_parquet(tmp_path / "counts.parquet")
    base.to_parquet(tmp_path / "base.parquet")
    out = tmp_path / "replay.json"
    code = main(["replay", str(tmp_path / "evals.csv"), "--counts", str(tmp_path / "counts.parquet"), "--base-counts",
                 str(tmp_path / "base.parquet"), "--base-reward", "0.1", "--bootstrap", "4", "--out", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert {"rollouts_spent", "rollouts_full_grid", "rounds", "arms", "fits"} <= set(result)
    assert {"curves", "frontier", "optimum_points", "optimum"} <= set(result["fits"])
    assert "rollouts spent" in capsys.readouterr().out
    counts.drop(columns=["n_correct"]).to_parquet(tmp_path / "bad.parquet")
    code = main(["replay", str(tmp_path / "evals.csv"), "--counts", str(tmp_path / "bad.parquet"), "--out", str(out)])
    assert code == 2 and "bad.parquet: missing column(s) 'n_correct'" in capsys.readouterr().err


def test_a_stop_starts_a_record_a_hold_keeps_its_round_and_a_resume_clears_it() -> None:
    """`stopped_after`, the one account of the stopped arms: a stop starts an arm's record, a hold at the last decision
    keeps its round (and cap) and takes the hold's rule and reason, a resume clears it; with a cap the replay's and
    summary's schema (round, cap, reason, rule), without it the round files' (round, rule, reason)."""
    stop = {"n": 8, "action": "stop", "reason": "above the plateau", "numbers": {"rule": "plateau"}}
    hold = {"n": 8, "action": "hold", "reason": "held at the last decision", "numbers": {"rule": "last_resume"}}
    resume = {"n": 8, "action": "resume", "reason": "the plateau moved", "numbers": {"rule": "plateau resume"}}
    extend = {"n": 4, "action": "extend", "reason": "a guard", "numbers": {}}
    stopped = stopped_after({}, [extend, stop], 1, 2.0)
    assert list(stopped[8].items()) == [("round", 1), ("cap", 2.0), ("reason", "above the plateau"), ("rule", "plateau")]
    held = stopped_after(stopped, [extend, hold], 2, 4.0)
    assert list(held[8].items()) == [("round", 1), ("cap", 2.0), ("reason", "held at the last decision"), ("rule", "last_resume")]
    assert stopped[8]["rule"] == "plateau" and stopped_after(held, [extend, resume], 3, 8.0) == {}
    files = stopped_after({}, [extend, stop], 1)
    assert list(files[8].items()) == [("round", 1), ("rule", "plateau"), ("reason", "above the plateau")]
    held = stopped_after(files, [extend, hold], 2)
    assert list(held[8].items()) == [("round", 1), ("rule", "last_resume"), ("reason", "held at the last decision")]
    assert stopped_after(held, [extend, resume], 3) == {}
    # A hold of an arm with no record (a round file written before stops were carried) starts one at its round.
    assert stopped_after({}, [hold], 2) == {8: {"round": 2, "rule": "last_resume", "reason": "held at the last decision"}}


def test_a_round_carries_each_arms_state_into_the_next() -> None:
    """The workflow's rounds: an arm stopped at round 0 stays at its rung, with the rule that stopped it, which
    the next rounds' fits read as settled there (at its last evaluation); the others reach the next rung."""
    rung_steps = {2: [4, 16, 64], 4: [2, 8, 32], 8: [1, 4, 16], 16: [0, 2, 8]}
    reached = reached_rungs(sorted(rung_steps), None, 0)
    assert reached == {2: 0, 4: 0, 8: 0, 16: 0}
    stop = {"n": 2, "action": "stop", "reason": "left behind a rising frontier", "numbers": {"rule": "behind"}}
    record = {"round": 0, "decisions": [stop, *({"n": n, "action": "extend", "numbers": {}} for n in (4, 8, 16))]}
    first = round_state(record, reached, rung_steps)
    assert first["arms"]["2"] == {"rung": 0, "steps": 4, "active": False,
                                  "stopped": {"round": 0, "rule": "behind", "reason": "left behind a rising frontier"}}  # fmt: skip
    assert first["arms"]["16"] == {"rung": 0, "steps": 0, "active": True}
    reached = reached_rungs(sorted(rung_steps), first, 1)
    assert reached == {2: 0, 4: 1, 8: 1, 16: 1}
    second = round_state({"round": 1, "decisions": [{"n": n, "action": "extend"} for n in (4, 8, 16)]}, reached, rung_steps, first)
    assert second["arms"]["2"]["stopped"]["round"] == 0 and second["arms"]["8"] == {"rung": 1, "steps": 4, "active": True}
    assert trained_rungs(rung_steps[16], 2) == [1, 2] and trained_rungs([2, 2, 5], 2) == [0, 2]
    evals = pd.DataFrame({"n": [2, 2, 4], "compute_rollouts": [64.0, 256.0, 512.0]})
    settled = settled_of_rounds(second, evals)
    assert list(settled) == [(2,)] and settled[(2,)].compute == 256.0 and settled[(2,)].rule == "behind"
    assert "on the assumption that n* rises" in settled[(2,)].reason
    # A round file written before stops were carried settles nothing: its stopped arms stay censored.
    assert settled_of_rounds({"arms": {"2": {"rung": 0, "steps": 4, "active": False}}}, evals) == {}


@pytest.mark.parametrize("prior", ["paper_easy", {"L": 4.0, "k": 3.0, "log10_c0": 4.0, "b": 1.0}, {"easy": "paper_easy"}])
def test_an_adaptive_sweep_takes_a_prior_by_name_law_or_problem_set(prior: object) -> None:
    config = adaptive()
    config["sweep"]["prior"] = prior
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    check_config(config)
    priors = adaptive_prior(config)
    assert priors is not None and set(priors) == ({"easy"} if prior == {"easy": "paper_easy"} else {"easy", "hard"})
    assert adaptive_prior(adaptive()) is None


@pytest.mark.parametrize(("prior", "message"), [
    ("results/fits/easy/missing/fits.json", r"sweep.prior: sweep.prior='results/fits/easy/missing/fits.json' is neither a file"),
    ({"medium": "paper_easy"}, r"sweep.prior names problem sets \['medium'\]"),
    ({"hard": "paper_medium"}, r"sweep.prior.hard: .*'paper_medium' is neither a file nor one of the paper's laws"),
])  # fmt: skip
def test_a_prior_that_is_no_law_is_refused_with_the_key(prior: object, message: str) -> None:
    config = adaptive()
    config["sweep"]["prior"] = prior
    with pytest.raises(ConfigError, match=message):
        check_config(config)


def test_cli_replay_with_a_prior_reports_whether_it_held(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    evals, counts, _ = draw(SCENARIOS["paper_easy_law"], 0)
    evals.to_csv(tmp_path / "evals.csv", index=False)
    counts.to_parquet(tmp_path / "counts.parquet")
    out = tmp_path / "replay.json"
    code = main(["replay", str(tmp_path / "evals.csv"), "--counts", str(tmp_path / "counts.parquet"), "--base-reward", "0.1",
                 "--bootstrap", "4", "--prior", "paper_easy", "--out", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["prior"]["source"] == "paper_easy" and result["prior"]["status"] in ("followed", "fallen back")
    assert all("prior" in round_ for round_ in result["rounds"])
    assert "prior paper_easy: " in capsys.readouterr().out
    code = main(["replay", str(tmp_path / "evals.csv"), "--counts", str(tmp_path / "counts.parquet"), "--base-reward", "0.1",
                 "--bootstrap", "4", "--rules", "bound,guess", "--out", str(out)])  # fmt: skip
    assert code == 2 and "unknown rules ['guess']" in capsys.readouterr().err
