"""The paper's training diagnostics on small constructed tables, and their figure."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from isocompute.figures.registry import FIGURES
from isocompute.mechanism.diagnostics import (
    BASE_RUN,
    base_rows,
    base_zero_std,
    checkpoint_diagnostics,
    nstar_by_metric,
    unbiased_all_fail,
)
from isocompute.study.specs import FigureStyle

STYLE = FigureStyle(palette="viridis", dpi=40, width=5.0, height=3.5, context="paper")


def test_base_estimates_are_unbiased() -> None:
    """Averaged over the binomial counts of m samples, the estimates equal (1 - p)^k and p^n + (1 - p)^n."""
    m, p = 16, 0.3
    counts = np.arange(m + 1)
    weights = binom.pmf(counts, m, p)
    assert weights @ unbiased_all_fail(counts, np.full(m + 1, m), 8) == pytest.approx((1 - p) ** 8)
    both = unbiased_all_fail(counts, np.full(m + 1, m), 4) + unbiased_all_fail(
        m - counts, np.full(m + 1, m), 4
    )
    assert weights @ both == pytest.approx(p**4 + (1 - p) ** 4)
    assert unbiased_all_fail(np.array([0, 16, 8]), np.array([16, 16, 16]), 8).tolist() == pytest.approx(
        [1.0, 0.0, 1 / 12870]
    )
    assert np.isnan(unbiased_all_fail(np.array([0]), np.array([4]), 8)[0])
    assert np.isnan(base_zero_std(np.array([3, 5]), np.array([16, 16]), 32))


def runs() -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Two runs (n = 2 and 8, B_problem 4), checkpoints at steps 2 and 4, four sampled training problems."""
    logs, rates = {}, {}
    for n, correct in ((2, [[0, 0, 3, 8], [0, 8, 8, 8]]), (8, [[0, 1, 3, 8], [1, 2, 3, 4]])):
        run = f"bp4_n{n}_seed0"
        logs[run] = pd.DataFrame(
            {
                "step": [1, 2, 3, 4],
                "compute_rollouts": [4 * n * s for s in (1, 2, 3, 4)],
                "frac_reward_zero_std": [1.0, 0.5, 0.25, 0.75],
                "reward": 0.5,
            }
        )
        tables = []
        for step, counts in zip((2, 4), correct):
            tables.append(pd.DataFrame({"id": list("abcd"), "n_correct": counts, "pass_rate": np.array(counts) / 8,
                                        "run": run, "b_problem": 4, "n": n, "seed": 0, "step": step,
                                        "compute_rollouts": 4 * n * step}))  # fmt: skip
        rates[run] = pd.concat(tables, ignore_index=True)
    return logs, rates


def test_checkpoint_diagnostics_count_stuck_problems_and_zero_variance_groups() -> None:
    logs, rates = runs()
    table = checkpoint_diagnostics(logs, rates, window=2.0).set_index(["n", "step"])
    assert table.loc[(2, 2), "share_unsolved"] == 0.5 and table.loc[(2, 4), "share_unsolved"] == 0.25
    assert table.loc[(2, 4), "share_solved"] == 0.75 and table.loc[(8, 4), "share_unsolved"] == 0.0
    assert table.loc[(2, 2), "share_unsolved_se"] == pytest.approx(np.sqrt(0.25 / 4))
    # compute in (C / 2, C]: step 2 averages steps 2 alone (step 1 sits at C / 2), step 4 steps 3 and 4
    assert table.loc[(2, 2), "zero_std_share"] == 0.5 and table.loc[(8, 4), "zero_std_share"] == 0.5
    with pytest.raises(ValueError, match="bp4_n2_seed0: training pass rates but no training table"):
        checkpoint_diagnostics({}, rates, 2.0)


def test_base_rows_give_the_base_model_expectation_per_curve() -> None:
    logs, rates = runs()
    table = checkpoint_diagnostics(logs, rates, window=2.0)
    difficulty = pd.DataFrame({"id": list("abcde"), "n_correct": [0, 16, 8, 4, 0], "n_samples": 16})
    base = base_rows(difficulty, list("abcd"), table, train_k=8).set_index("n")
    assert (base["run"] == BASE_RUN).all() and (base["compute_rollouts"] == 0).all()
    assert base.loc[2, "share_unsolved"] == pytest.approx(
        (1 + 0 + 1 / 12870 + unbiased_all_fail(4, 16, 8)) / 4
    )
    assert base.loc[2, "zero_std_share"] == pytest.approx(
        base_zero_std(difficulty["n_correct"], difficulty["n_samples"], 2)
    )
    assert base.loc[8, "zero_std_share"] < base.loc[2, "zero_std_share"]
    with pytest.raises(ValueError, match=r"training problems \['z'\] are not in"):
        base_rows(difficulty, ["a", "z"], table, train_k=8)


FITS = {
    "headline": {"compute": "compute_rollouts"},
    "fits": {
        metric: {"compute_rollouts": {"by": ["n"], "optimum_points": [
            {"compute": 100.0, "n": 2, "resolved": {"n": True}}, {"compute": 1000.0, "n": last, "resolved": {"n": False}}]}}
        for metric, last in (("avg@4", 4), ("best@4", 8), ("worst@4", 2))
    },
}  # fmt: skip


def test_nstar_by_metric_reads_the_frontier_of_each_metric() -> None:
    table = nstar_by_metric(FITS)
    final = table[table["at_max"]].set_index("metric")["n"]
    assert final.to_dict() == {"avg@4": 4, "best@4": 8, "worst@4": 2}
    assert (
        not table.loc[table["at_max"], "n_resolved"].any() and table.loc[~table["at_max"], "n_resolved"].all()
    )


def test_figures_draw_from_the_tables_through_the_registry(tmp_path: Path) -> None:
    """What the rules plot_diagnostics and plot_interference do: the registry's drawing function, on files."""
    logs, rates = runs()
    table = checkpoint_diagnostics(logs, rates, window=2.0)
    difficulty = pd.DataFrame({"id": list("abcd"), "n_correct": [0, 16, 8, 4], "n_samples": 16})
    table = pd.concat([base_rows(difficulty, list("abcd"), table, 8), table], ignore_index=True)
    table.to_parquet(tmp_path / "training.parquet")
    nstar_by_metric(FITS).to_parquet(tmp_path / "nstar_by_metric.parquet")
    tables = {"table": [str(tmp_path / "training.parquet")], "nstar": [str(tmp_path / "nstar_by_metric.parquet")]}
    paths = [str(tmp_path / "diagnostics.png"), str(tmp_path / "diagnostics.pdf")]
    draw = FIGURES["diagnostics"].drawing()
    with pytest.raises(ValueError, match="curve keys"):
        draw("diagnostics", tables, "test", STYLE, paths)
    draw("diagnostics", tables, "test", STYLE, paths, by=["n"], train_k=8)
    summary = {"mean": 0.1, "share_below_-0.1": 0.2, "share_above_0.1": 0.3}
    result = {"sets": {"a": {}, "b": {}}, "cosines": {"adam": {"a x a": summary, "a x b": summary, "b x b": summary}},
              "one_step": [{"along": x, "on": y, "lr": 1e-4, "change_mean_log_p": 0.01} for x in "ab" for y in "ab"]}  # fmt: skip
    (tmp_path / "probe.json").write_text(json.dumps(result))
    pairs = pd.DataFrame({"block": ["a x a", "a x b", "b x b"] * 3, "cosine_adam": np.linspace(-0.5, 0.9, 9)})
    pairs.to_parquet(tmp_path / "pairs.parquet")
    probe = {"probe": [str(tmp_path / "probe.json")], "pairs": [str(tmp_path / "pairs.parquet")]}
    FIGURES["interference"].drawing()("interference", probe, "probe", STYLE, [str(tmp_path / "probe.png")])
    assert all(Path(p).stat().st_size > 0 for p in [*paths, tmp_path / "probe.png"])
