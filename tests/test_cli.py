"""`isocompute fit`, `recommend`, `replay` and `plot`, as a user runs them on an evaluation table."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from known_truth import SCENARIOS, draw

from isocompute.cli import main
from isocompute.fits.forms import reward_curve
from isocompute.fits.recommend import describe_recommendation, power_of_two, recommend, recommend_or_reason
from isocompute.study.grid import learning_rate

CURVES = {8: (0.3, 0.55, 3.5, 1.5), 32: (0.3, 0.62, 4.5, 1.5), 128: (0.3, 0.70, 5.5, 1.5)}


def write_evals(tmp_path: Path, suffix: str = ".csv") -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    rows, counts = [], []
    for n, params in CURVES.items():
        for step, c in enumerate(np.geomspace(1e3, 1e7, 13), start=1):
            correct = rng.binomial(4, reward_curve(np.log10(c), *params), size=200)
            at = {"run": f"bp32_n{n}_seed0", "b_problem": 32, "n": n, "seed": 0, "step": step,
                  "compute_rollouts": c, "compute_tokens": 7 * c}  # fmt: skip
            rows.append({**at, "avg@4": correct.mean() / 4, "best@4": (correct > 0).mean(), "worst@4": (correct == 4).mean()})
            counts.append(pd.DataFrame({"id": [f"p{i}" for i in range(200)], "n_correct": correct, **at}))
    evals, val_counts = tmp_path / f"evals{suffix}", tmp_path / "val_counts.parquet"
    table = pd.DataFrame(rows)
    table.to_csv(evals, index=False) if suffix == ".csv" else table.to_parquet(evals)
    pd.concat(counts).to_parquet(val_counts)
    return evals, val_counts


def test_fit_writes_the_documented_schema(tmp_path: Path) -> None:
    evals, counts = write_evals(tmp_path)
    out = tmp_path / "fits.json"
    assert main([
        "fit", str(evals), "--metric", "avg@4", "--by", "n", "--compute", "rollouts", "--out", str(out),
        "--counts", str(counts), "--bootstrap", "20",
    ]) == 0  # fmt: skip
    fits = json.loads(out.read_text())
    fit = fits["fits"]["avg@4"]["compute_rollouts"]
    assert {c["key"]["n"] for c in fit["curves"]} == {8, 32, 128}
    assert all({"r0", "a", "log10_c_mid", "b", "intervals"} <= set(c) for c in fit["curves"])
    assert {"compute", "reward", "n", "reward_low", "reward_high"} <= set(fit["frontier"][0])
    assert all({"range", "flags", "identified"} <= set(c) for c in fit["curves"])
    optimum = fit["optimum"]["n"]
    assert {"levels", "points_used", "identified", "agreement", "rise", "reversal", "range", "extrapolates"} <= set(optimum)
    assert optimum["ok"] or optimum["reason"]
    assert fit["optimum_at_max_compute"]["n"] == 128
    assert {"compute", "n", "shares", "resolved", "leaders", "tie_reason"} <= set(fit["optimum_points"][-1])
    assert fit["holdout"]["decades"] == 0.5 and "checkable" in fit["holdout"]
    assert fits["study"]["fixed"] == {"b_problem": 32}


def test_fit_in_tokens_from_parquet(tmp_path: Path) -> None:
    evals, _ = write_evals(tmp_path, ".parquet")
    out = tmp_path / "fits.json"
    assert main(["fit", str(evals), "--compute", "tokens", "--out", str(out)]) == 0
    fit = json.loads(out.read_text())["fits"]["avg@4"]["compute_tokens"]
    assert fit["frontier"][0]["compute"] == pytest.approx(7e3)


def test_bad_tables_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evals, _ = write_evals(tmp_path)
    pd.read_csv(evals).drop(columns=["compute_tokens"]).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "x.json")]) == 2
    assert "bad.csv: missing column(s) 'compute_tokens'" in capsys.readouterr().err
    mixed = pd.read_csv(evals)
    other = mixed[mixed["n"] == 8].assign(b_problem=64, run="bp64_n8_seed0")
    pd.concat([mixed, other]).to_csv(tmp_path / "mixed.csv", index=False)
    assert main(["fit", str(tmp_path / "mixed.csv"), "--out", str(tmp_path / "x.json")]) == 2
    assert "--by b_problem,n" in capsys.readouterr().err
    ablation = pd.read_csv(evals).assign(recipe=None)
    ablation.loc[0, "recipe"] = "kl_entropy_zv_full"
    ablation.to_csv(tmp_path / "ablation.csv", index=False)
    assert main(["fit", str(tmp_path / "ablation.csv"), "--out", str(tmp_path / "x.json")]) == 2
    assert "mixes runs of several recipes or learning rates" in capsys.readouterr().err


def test_recommend_takes_the_learning_rate_rule_of_the_fits(tmp_path: Path) -> None:
    evals, counts = write_evals(tmp_path)
    out = tmp_path / "fits.json"
    main(["fit", str(evals), "--out", str(out), "--counts", str(counts), "--bootstrap", "20", "--lr-base", "1e-6",
          "--lr-rule", "linear"])  # fmt: skip
    fits = json.loads(out.read_text())
    assert fits["learning_rate"] == {"lr_rule": "linear", "lr_base": 1e-6, "lr_batch_ref": 1024}
    advice = recommend(fits, 1e6)
    assert advice["learning_rate"] == pytest.approx(1e-6 * advice["batch"] / 1024)


def test_recommend_inside_and_beyond_the_measured_range(tmp_path: Path) -> None:
    evals, counts = write_evals(tmp_path)
    out = tmp_path / "fits.json"
    main(["fit", str(evals), "--out", str(out), "--counts", str(counts), "--bootstrap", "20", "--lr-base", "1e-6"])
    fits = json.loads(out.read_text())
    inside = recommend(fits, 1e6)
    assert 32 <= inside["n"] <= 128 and inside["b_problem"] == 32 and not inside["warnings"]
    assert inside["steps"] == int(np.ceil(1e6 / (32 * inside["n"])))
    assert inside["learning_rate"] == pytest.approx(learning_rate(32 * inside["n"], 1e-6, 1024, "sqrt"))
    assert inside["n_share"] is not None or inside["n_interval"] is not None
    result = subprocess.run(["isocompute", "recommend", str(out), "--compute", "1e9"], capture_output=True, text=True)
    if fits["fits"]["avg@4"]["compute_rollouts"]["optimum"]["n"]["ok"]:
        assert result.returncode == 0 and "WARNING" in result.stdout and "B_problem = 32" in result.stdout
    else:
        assert result.returncode == 2 and "outside the measured range" in result.stderr
    assert "checked:" in describe_recommendation(inside)


def test_power_of_two_rounds_in_log_space() -> None:
    assert [power_of_two(v) for v in (0.3, 1.4, 1.5, 2.9, 3.0, 46.0, 45.0)] == [1, 1, 2, 4, 4, 64, 32]


def test_no_frontier_gives_a_reason_not_a_crash() -> None:
    fits = {
        "headline": {"metric": "avg@4", "compute": "compute_rollouts"},
        "study": {"fixed": {"b_problem": 8}},
        "recipe": {"lr_rule": "sqrt", "lr_base": 1e-6, "lr_batch_ref": 1024},
        "fits": {"avg@4": {"compute_rollouts": {
            "by": ["n"], "compute": "compute_rollouts",
            "measured": [{"n": 2, "step": 1, "compute_rollouts": 16.0, "avg@4": 0.0}], "frontier": [],
            "optimum_points": [], "optimum": {"n": {"ok": False, "reason": "no curve could be fitted"}},
        }}},
    }  # fmt: skip
    advice = recommend_or_reason(fits, 1e4)
    assert "no curve could be fitted" in advice["error"]
    assert "no recommendation" in describe_recommendation(advice)


def test_replay_without_counts_names_residual_bands(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A sweep logged by a tracker has no per-problem counts: replay runs on the table alone, each decision's
    bands from the residual bootstrap `fit` draws without counts, and says so in its JSON and its output."""
    evals, _, base = draw(SCENARIOS["paper_easy_law"], 0)
    evals.to_csv(tmp_path / "evals.csv", index=False)
    base.to_parquet(tmp_path / "base.parquet")
    out = tmp_path / "replay.json"
    evals_path = str(tmp_path / "evals.csv")
    options = ["--base-reward", "0.1", "--bootstrap", "4", "--rung-factor", "4", "--out", str(out)]
    code = main(["replay", evals_path, *options])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    result = json.loads(out.read_text())
    assert result["bootstrap"]["kind"] == result["fits"]["bootstrap"]["kind"] == "residuals"
    assert result["rollouts_spent"] < result["rollouts_full_grid"]
    assert "bands: residual bootstrap of each curve, no per-problem counts" in printed.out
    code = main(["replay", evals_path, "--base-counts", str(tmp_path / "base.parquet"), "--out", str(out)])
    error = capsys.readouterr().err
    assert code == 2 and f"--base-counts {tmp_path / 'base.parquet'}" in error and "give both" in error


def test_plot_draws_the_pipelines_figures_from_a_fit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`isocompute plot` on `isocompute fit`'s output: the figures the pipeline draws for a fixed-B_problem
    study from its fits (each curve with its fit and the frontier, n*(C) with its law, the hold-out check),
    each file printed; a metric or compute measure the file was not fitted for is refused with its key."""
    evals, _, _ = draw(SCENARIOS["paper_easy_law"], 0)
    evals.to_csv(tmp_path / "evals.csv", index=False)
    fits, out = tmp_path / "fits.json", tmp_path / "figures"
    evals_path = str(tmp_path / "evals.csv")
    assert main(["fit", evals_path, "--base-reward", "0.1", "--bootstrap", "4", "--out", str(fits)]) == 0
    capsys.readouterr()
    assert main(["plot", str(fits), "--out", str(out), "--format", "png", "pdf"]) == 0
    printed = capsys.readouterr().out.split()
    figures = ["fig05_frontier", "fig06_nstar", "fig_extrapolation"]
    expected = sorted(f"{figure}.{extension}" for figure in figures for extension in ("png", "pdf"))
    assert sorted(Path(path).name for path in printed) == sorted(path.name for path in out.iterdir())
    assert sorted(Path(path).name for path in printed) == expected
    assert all(Path(path).stat().st_size > 3000 for path in printed)
    assert main(["plot", str(fits), "--metric", "best@4", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{fits}: no fit of metric 'best@4' (key fits['best@4']); it has ['avg@4']" in error
    assert main(["plot", str(fits), "--compute", "tokens", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "key fits['avg@4']['compute_tokens']" in error and "it has ['compute_rollouts']" in error
