"""The adaptive rule's peers in the replay: optuna's pruners really driven, top-k really keeping the top half,
on the rule's rungs and accounting; `isocompute replay --policy` writes which policy ran and what it spent.
`python tests/benchmark_peers.py` prints every policy on the known truth."""

import json
from pathlib import Path

import pandas as pd
import pytest
from adaptive_truth import options
from benchmark_peers import FAMILIES, outcome, replay_draw
from known_truth import K, Scenario, draw

from isocompute.adaptive.decisions import replay
from isocompute.adaptive.peers import PEERS, POLICIES, peer_replay, replay_policy
from isocompute.adaptive.rungs import AdaptiveError, AdaptiveSettings
from isocompute.cli import main

BOOTSTRAP = 4
SETTINGS = AdaptiveSettings(rung_factor=2.0, min_steps=1, audit_rungs=1)
LOSER = 4
# Six arms on a shared grid of 1e3 .. 6.4e4 rollouts, rising from the first rung: n = 4 stays near the base
# value (0.1) while every other n climbs towards 0.6-0.7, so at every rung n = 4 is last by ~0.2.
DOMINATED = Scenario(
    "dominated",
    {
        2: (0.62, 3.3, 1.5),
        LOSER: (0.14, 3.3, 1.5),
        8: (0.66, 3.4, 1.5),
        16: (0.68, 3.5, 1.5),
        32: (0.70, 3.6, 1.5),
        64: (0.70, 3.7, 1.5),
    },
    1e3,
    6.4e4,
    13,
)


@pytest.fixture(scope="module")
def dominated() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return draw(DOMINATED, 0)


def arms_of(result: dict) -> dict[int, dict]:
    return {arm["n"]: arm for arm in result["arms"]}


@pytest.mark.parametrize("policy", PEERS)
def test_each_peer_stops_a_clearly_dominated_arm_early(dominated: tuple, policy: str) -> None:
    """n = 4 lies ~0.2 under every other arm at every rung: each peer stops it within the first two rungs, so
    the rows beyond are not spent, and the share counts only what ran (the rule's accounting)."""
    evals, counts, base = dominated
    result = replay_policy(policy, evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base,
                           pruner={"n_startup_trials": 1} if policy == "median" else None)  # fmt: skip
    loser = arms_of(result)[LOSER]
    assert result["policy"] == policy
    assert "stopped" in loser and loser["stopped"]["round"] <= 1, loser
    assert loser["compute_reached"] <= result["rungs"][1] * 1.13 < loser["compute_full"]
    assert result["share_of_full_grid"] < 1.0
    assert result["rollouts_spent"] == pytest.approx(
        sum(arm["compute_reached"] for arm in result["arms"])
    )  # one run per arm: spent is the compute reached, summed
    assert {"curves", "frontier", "optimum_points", "optimum"} <= set(result["fits"])


def test_optunas_median_pruner_is_driven_and_keeps_its_startup_trials(dominated: tuple) -> None:
    """Trials run in ascending n, so n = 4 is the second trial: with the median pruner's default 5 startup
    trials it cannot be pruned and runs to C_max; with 1 startup trial, the first completed arm's median
    prunes it at its first report. What prunes is optuna's own pruner, with the settings the replay names."""
    evals, counts, base = dominated
    default = peer_replay("median", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base)
    assert default["pruner"]["name"] == "optuna.pruners.MedianPruner"
    assert default["pruner"]["settings"]["n_startup_trials"] == 5
    assert "stopped" not in arms_of(default)[LOSER] and arms_of(default)[LOSER]["steps"] == max(
        evals.loc[evals["n"] == LOSER, "step"]
    )
    eager = peer_replay(
        "median", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base, pruner={"n_startup_trials": 1}
    )
    assert arms_of(eager)[LOSER]["stopped"]["round"] == 0
    assert "MedianPruner" in arms_of(eager)[LOSER]["stopped"]["reason"]
    assert eager["share_of_full_grid"] < default["share_of_full_grid"]


def test_top_k_keeps_the_top_half_of_the_measured_arms_at_each_rung(dominated: tuple) -> None:
    evals, counts, base = dominated
    result = peer_replay("top_k", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base)
    first = [arm for arm in result["arms"] if arm.get("stopped", {}).get("round") == 0]
    measured = evals.loc[evals["compute_rollouts"] <= result["rungs"][0] * 1.13, "n"].nunique()
    assert len(first) == measured // 2 and LOSER in {arm["n"] for arm in first}


def test_the_rule_and_its_peers_account_the_same_grid(dominated: tuple) -> None:
    """One definition of the spend: every policy's full grid is the same, and the rule through `replay_policy`
    is `replay` itself."""
    evals, counts, base = dominated
    rule = replay_policy("isocompute", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base)
    assert rule["policy"] == "isocompute"
    assert (
        rule["share_of_full_grid"]
        == replay(evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base)["share_of_full_grid"]
    )
    peer = replay_policy("top_k", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base)
    assert peer["rollouts_full_grid"] == rule["rollouts_full_grid"] and peer["rungs"] == rule["rungs"]


def test_a_peer_is_refused_what_only_the_rule_reads(dominated: tuple) -> None:
    evals, counts, base = dominated
    with pytest.raises(AdaptiveError, match=r"policy 'median' reads no prior and has no rules"):
        replay_policy(
            "median", evals, counts, options(0.1), K, BOOTSTRAP, 0, SETTINGS, base, rules=("bound",)
        )
    with pytest.raises(AdaptiveError, match=r"pruner settings .* not 'top_k'"):
        peer_replay(
            "top_k",
            evals,
            counts,
            options(0.1),
            K,
            BOOTSTRAP,
            0,
            SETTINGS,
            base,
            pruner={"n_startup_trials": 1},
        )


def test_cli_replay_writes_the_policy_and_its_share_and_names_the_choices(
    tmp_path: Path, dominated: tuple, capsys: pytest.CaptureFixture
) -> None:
    evals = dominated[0]
    evals.to_csv(tmp_path / "evals.csv", index=False)
    out = tmp_path / "replay.json"
    code = main(["replay", str(tmp_path / "evals.csv"), "--policy", "successive_halving", "--bootstrap", "4",
                 "--min-steps", "1", "--out", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["policy"] == "successive_halving" and 0 < result["share_of_full_grid"] < 1
    assert result["pruner"]["name"] == "optuna.pruners.SuccessiveHalvingPruner"
    assert result["bootstrap"]["kind"] == "residuals"
    printed = capsys.readouterr().out
    assert (
        "policy successive_halving: rollouts spent" in printed
        and f"({result['share_of_full_grid']:.0%})" in printed
    )
    code = main(["replay", str(tmp_path / "evals.csv"), "--policy", "asha", "--out", str(out)])
    error = capsys.readouterr().err
    assert code == 2 and "unknown policy 'asha'" in error and str(list(POLICIES)) in error


# The rule's reached figures in the peers benchmark (`python tests/benchmark_peers.py`, docs/log/adaptive-peers.md,
# with stopped arms settled): on these draws with per-problem counts the rule kept the law within a factor 2 of
# the truth at >= 94 % of its points for at most 48 % of the grid, and successive halving (optuna's, the
# library's settings on the rule's rungs) lost it for 13 %.
BENCHMARK_DRAWS = [("close_shared_saturating", 0), ("close_shared_saturating", 1), ("close_power2_rising", 0), ("close_power2_rising", 1)]
RULE_SHARE = 0.52
RULE_RECOVERY = 0.9


@pytest.mark.heavy
@pytest.mark.parametrize(("family", "seed"), BENCHMARK_DRAWS)
def test_the_rule_keeps_the_law_where_successive_halving_loses_it(family: str, seed: int) -> None:
    """The benchmark's rows for the rule and successive halving on one draw (with counts): the rule spends at
    most `RULE_SHARE` of the grid and keeps the law at `RULE_RECOVERY` of the points; successive halving spends
    less and is not right (no law within a factor 2 at 80 % of the points). 77 s for the four draws on the
    shared 2-core machine (2026-12-06)."""
    results = replay_draw(FAMILIES[family], seed, True, ["isocompute", "successive_halving"])
    rule, peer = results["isocompute"], results["successive_halving"]
    _, right, recovered = outcome(family, rule["fits"])
    print(f"{family} seed {seed}: rule {rule['share_of_full_grid']:.0%} recovery {recovered}; "
          f"successive halving {peer['share_of_full_grid']:.0%}")  # fmt: skip
    assert right and recovered is not None and recovered >= RULE_RECOVERY, (family, seed, recovered)
    assert rule["share_of_full_grid"] <= RULE_SHARE, (family, seed)
    assert peer["share_of_full_grid"] < rule["share_of_full_grid"] and not outcome(family, peer["fits"])[1]


# Where every arm ties (`close_flat`: every n the same curve), the rule's tie part (`decisions.tied_to_frontier`)
# stops the level arms that are no guard from a quarter of their run; in the benchmark (docs/log/adaptive-peers.md,
# setting T3) the rule spent 55 % and 42 % of the grid on these draws with counts, the median pruner 66 % and 75 %,
# and neither reported a law.
TIED_DRAWS = [("close_flat", 0), ("close_flat", 2)]


@pytest.mark.heavy
@pytest.mark.parametrize(("family", "seed"), TIED_DRAWS)
def test_where_every_arm_ties_the_rule_stops_tied_arms_and_spends_no_more_than_the_median_pruner(
    family: str, seed: int
) -> None:
    """The benchmark's rows for the rule and the median pruner on one draw (with counts): the rule stopped arms as
    tied, reports no law (the tied arms censored beyond their stops) and spends no more than the median pruner."""
    results = replay_draw(FAMILIES[family], seed, True, ["isocompute", "median"])
    rule, peer = results["isocompute"], results["median"]
    tied = [
        d
        for round_ in rule["rounds"]
        for d in round_["decisions"]
        if d["numbers"].get("rule") == "tie" and d["action"] == "stop"
    ]
    print(f"{family} seed {seed}: rule {rule['share_of_full_grid']:.0%}, {len(tied)} tie stops; "
          f"median {peer['share_of_full_grid']:.0%}")  # fmt: skip
    assert tied
    assert not rule["fits"]["optimum"]["n"]["ok"], rule["fits"]["optimum"]["n"]
    assert rule["share_of_full_grid"] <= peer["share_of_full_grid"], (family, seed)
