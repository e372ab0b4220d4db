"""Data ablations: the training metrics of Fig. 14 and their fits, and the data figures."""

import json

import numpy as np
import pandas as pd
import pytest

from isocompute.figures.data_ablation import plot_extremely_hard, plot_mixtures, plot_train_vs_val
from isocompute.figures.registry import DATA_FIGURES, FIGURES
from isocompute.fits.data_ablation import fit_train_metrics, nstar_by_size, smoothed_reward, train_evals
from isocompute.study.specs import FigureStyle
from isocompute.study.studies import Study

FITS = {"points": "all", "record_bin": 0.01, "extrapolate": False, "min_compute": 0, "frontier_points": 20}
STYLE = FigureStyle(palette="viridis", dpi=40, width=4.0, height=3.0, context="paper")


def test_smoothed_reward_is_a_trailing_mean_over_a_factor_of_compute() -> None:
    log = pd.DataFrame({"step": [1, 2, 3, 4, 5], "compute_rollouts": [10, 20, 30, 40, 50],
                        "reward": [0.0, 1.0, 0.0, 1.0, np.nan]})  # fmt: skip
    smoothed = smoothed_reward(log, 2.0)
    # C = 40: steps with compute in (20, 40] are 30 and 40; C = 50: (25, 50] holds 30, 40 (50's is missing).
    assert smoothed.tolist() == [0.0, 1.0, 0.5, 0.5, 0.5]
    assert smoothed_reward(log, 100.0).tolist()[:4] == [0.0, 0.5, 1 / 3, 0.5]


def synthetic_run(n: int, steps: int, batch: int, rate: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run whose training reward and pass rate rise along a sigmoid in compute, faster for larger `rate`."""
    compute = np.arange(1, steps + 1) * batch
    reward = 0.2 + 0.6 / (1 + (4000 / (rate * compute)) ** 1.5)
    log = pd.DataFrame({"step": np.arange(1, steps + 1), "compute_rollouts": compute, "reward": reward})
    checkpoints = sorted({max(1, round(c / batch)) for c in np.geomspace(batch, compute[-1], 7)})
    rows = []
    for step in checkpoints:
        for problem in range(10):
            rows.append({"run": f"bp16_n{n}_seed0", "b_problem": 16, "n": n, "seed": 0, "step": step,
                         "compute_rollouts": step * batch, "pass_rate": reward[step - 1] + 0.01 * (problem - 4.5)})  # fmt: skip
    return log, pd.DataFrame(rows)


def study_tables() -> tuple[dict, dict]:
    logs, rates = {}, {}
    for n, rate in ((4, 2.0), (16, 0.5)):
        log, rate_table = synthetic_run(n, 65536 // (16 * n), 16 * n, rate)
        logs[f"bp16_n{n}_seed0"], rates[f"bp16_n{n}_seed0"] = log, rate_table
    return logs, rates


def test_training_metrics_are_fitted_like_validation() -> None:
    logs, rates = study_tables()
    evals = train_evals(logs, rates, 2.0)
    assert set(evals["n"]) == {4, 16} and evals["train_reward"].notna().all()
    # The training pass rate at a checkpoint is the mean over the sampled problems.
    first = evals[(evals["n"] == 4)].iloc[0]
    assert first["train_pass_rate"] == pytest.approx(rates["bp16_n4_seed0"].query("step == @first.step")["pass_rate"].mean())
    fits = fit_train_metrics(evals, Study("easy", "fixed_b_problem", 16), FITS, 2.0)
    assert fits["window"] == 2.0 and set(fits["fits"]) == {"train_reward", "train_pass_rate"}
    for fit in fits["fits"].values():
        assert fit["by"] == ["n"] and len(fit["curves"]) == 2 and fit["frontier"]
    # n = 4 rises four times faster per rollout here: it holds the frontier at the largest compute.
    assert fits["fits"]["train_reward"]["optimum_at_max_compute"]["n"] == 4


def validation_fit(n_star: int) -> dict:
    return {"fits": {"avg@4": {"compute_rollouts": {"optimum_points": [{"compute": 1000.0, "n": 8}, {"compute": 4000.0, "n": n_star}]}}}}


def test_nstar_by_size_is_read_at_the_largest_compute_all_sizes_share() -> None:
    train = {"fits": {name: {"optimum_points": [{"compute": 1000.0, "n": 2}, {"compute": 8000.0, "n": 32}]}
                      for name in ("train_reward", "train_pass_rate")}}  # fmt: skip
    table = nstar_by_size([250, 1000], [validation_fit(16), validation_fit(64)], [train, train], "avg@4")
    assert (table["compute"] == 4000.0).all()
    assert table.query("metric == 'validation avg@4'")["n_star"].tolist() == [16, 64]
    assert table.query("metric == 'train_reward'")["n_star"].tolist() == [2, 2]


def test_data_figures_draw_from_fits(tmp_path) -> None:
    from isocompute.fits.curves import FitOptions
    from isocompute.fits.study_fit import fit_study

    logs, rates = study_tables()
    evals = train_evals(logs, rates, 2.0).rename(columns={"train_reward": "avg@4", "train_pass_rate": "best@4"})
    evals["worst@4"] = evals["avg@4"] / 2
    study = {"study": {"name": "bp16"}, "fits": {
        metric: {"compute_rollouts": fit_study(evals, FitOptions(metric, "compute_rollouts"), frontier_points=20)}
        for metric in ("avg@4", "best@4", "worst@4")}}  # fmt: skip
    base = {"avg@4": 0.2, "best@4": 0.3, "worst@4": 0.1}
    train = fit_train_metrics(train_evals(logs, rates, 2.0), Study("s", "fixed_b_problem", 16), FITS, 2.0)
    assert json.loads(json.dumps(train))["window"] == 2.0  # the fits are plain JSON, as the rule writes them
    paths = {name: [str(tmp_path / f"{name}.png")] for name in ("f14", "f15", "f20")}
    plot_extremely_hard(study, base, 4, "Fig. 20", STYLE, paths["f20"])
    plot_mixtures([("mix", study, 0.2), ("easy", study, 0.2)], "avg@4", "Fig. 15", STYLE, paths["f15"])
    plot_train_vs_val([250, 1000], [study, study], [train, train], [0.2, 0.2], "avg@4", "Fig. 14", STYLE, paths["f14"])
    assert all((tmp_path / f"{name}.png").stat().st_size > 10_000 for name in paths)
    # The same figures through the function their registry entry names, from the files the rule passes.
    (tmp_path / "fits.json").write_text(json.dumps(study))
    (tmp_path / "train_fits.json").write_text(json.dumps(train))
    pd.DataFrame([base]).to_parquet(tmp_path / "base.parquet")
    inputs = {"fits": [str(tmp_path / "fits.json")] * 2, "base": [str(tmp_path / "base.parquet")] * 2,
              "train_fits": [str(tmp_path / "train_fits.json")] * 2}  # fmt: skip
    for name in DATA_FIGURES:
        out = tmp_path / f"{name}_drawn.png"
        FIGURES[name].drawing()(name, inputs, ["mix", "easy"], [250, 1000], "avg@4", 4, STYLE, [str(out)])
        assert out.stat().st_size > 10_000


def test_data_figure_instances_pair_each_figure_with_the_sets_it_draws() -> None:
    from isocompute.fits.data_ablation import data_figure_instances

    def settings(sweep=None, size=100, mix_of=(), parts=({"bucket": "easy"},)):
        return {"sweep": sweep, "mix_of": list(mix_of), "build": {"train_size": size, "parts": list(parts)}}

    sets = {
        "easy": settings(),
        "hard": settings(),
        "easy_s200": settings(sweep="size", size=200),
        "easy_s50": settings(sweep="size", size=50),
        "mix": settings(mix_of=["easy", "hard"], parts=({"bucket": "easy"}, {"bucket": "hard"})),
        "xhard": settings(parts=({"pass_at": 64},)),
        "nostudy": settings(sweep="size"),
    }
    studied = {name: "bp4" for name in sets if name != "nostudy"}
    instances = data_figure_instances(sets, studied, {"mix": ["hard"], "easy": ["aime"]}, ["aime"])
    assert instances == {
        "fig14_train_vs_val_size": [("easy_s50", None), ("easy_s200", None)],  # by training-set size
        "fig15_mixtures_bp4": [("mix", None), ("mix", "hard"), ("easy", None), ("hard", None)],
        "fig20_extremely_hard_xhard": [("xhard", None)],
        "fig21_out_of_domain_aime": [("easy", None), ("easy", "aime")],
    }
    assert data_figure_instances(sets, {}, {}, []) == {}
