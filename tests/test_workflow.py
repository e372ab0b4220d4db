"""The real Snakefile, end to end on the micro config, in a scratch copy of the workflow."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, copy_of_study
from test_problems import guru_rows
from transformers import AutoModelForCausalLM

from isocompute.pipeline.artifacts import describe_artifact

MICRO = ".test/config_micro/config.yaml"
WORKFLOW_PARTS = ["Snakefile", "rules", "workflow", "config", "envs", ".test", "profiles"]


def snakemake(
    workdir: Path, *args: str, configfiles: tuple[str, ...] = (MICRO,), package: Path = REPO / "src"
) -> subprocess.CompletedProcess[str]:
    """Snakemake in a scratch copy, on `package` (this checkout's, whatever an installed editable one
    points at; the upgrade test passes the copy's own)."""
    return subprocess.run(
        ["snakemake", "--cores", "2", *args, "--configfile", *configfiles],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(package)},
    )


def scratch_workflow(workdir: Path) -> Path:
    """A copy of the workflow to run in, so tests never write into the repository."""
    for part in WORKFLOW_PARTS:
        source = REPO / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, workdir / part)
    return workdir


@pytest.fixture(scope="module")
def study(finished_micro_study: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished micro study that this module's tests extend."""
    return copy_of_study(finished_micro_study, tmp_path_factory.mktemp("study") / "workdir")


@pytest.mark.slow
def test_every_stage_leaves_its_artifacts(study: Path) -> None:
    results = study / "results"
    pool = pd.read_parquet(results / "problems/pool.parquet")
    assert list(pool.columns) == ["id", "prompt", "answer"] and len(pool) == 400

    model = AutoModelForCausalLM.from_pretrained(results / "base_model/model")
    assert model.config.model_type == "qwen2"
    assert len(pd.read_parquet(results / "base_model/pretrain_log.parquet")) == 400

    difficulty = pd.read_parquet(results / "difficulty/problem_difficulty.parquet")
    assert len(difficulty) == 400 and (difficulty["n_samples"] == 16).all()
    assert len(list((results / "difficulty/shards").glob("*.parquet"))) == 2

    # Each set is built by its own job when a run needs it: the micro grid trains on Easy only.
    assert not (results / "problem_sets/hard").exists()
    train = pd.read_parquet(results / "problem_sets/easy/train.parquet")
    val = pd.read_parquet(results / "problem_sets/easy/val.parquet")
    assert (len(train), len(val)) == (60, 40)
    assert not set(train["id"]) & set(val["id"])  # no training problem is a validation problem

    for (b_problem, n), steps in {(4, 2): [2, 3, 5, 8], (4, 4): [1, 2, 3, 4], (1, 8): [2, 3, 5, 8]}.items():
        run = results / f"train/easy/bp{b_problem}_n{n}_seed0"
        log = pd.read_parquet(run / "train_log.parquet")
        assert log["step"].tolist() == list(range(1, steps[-1] + 1))
        assert (log["compute_rollouts"] == log["step"] * b_problem * n).all()
        manifest = json.loads((run / "checkpoints.json").read_text())
        assert [m["step"] for m in manifest] == steps
        evaluation = results / f"evaluation/easy/bp{b_problem}_n{n}_seed0"
        evals = pd.read_parquet(evaluation / "evals.parquet")
        assert evals["step"].tolist() == steps
        assert {"avg@4", "best@4", "worst@4", "compute_rollouts", "compute_tokens"} <= set(evals.columns)
        assert (evals["worst@4"] <= evals["avg@4"]).all() and (evals["avg@4"] <= evals["best@4"]).all()
        assert len(pd.read_parquet(evaluation / "val_counts.parquet")) == 40 * len(steps)
        assert len(pd.read_parquet(evaluation / "train_pass_rates.parquet")) == 20 * len(steps)
    assert len(pd.read_csv(results / "evaluation/evals.csv")) == 12

    base = pd.read_parquet(results / "evaluation/easy/base_model.parquet")
    for name, by, measures in [("bp4", ["n"], 2), ("batch8", ["b_problem", "n"], 1), ("joint", ["b_problem", "n"], 2)]:
        fits = json.loads((results / f"fits/easy/{name}/fits.json").read_text())
        assert set(fits["fits"]) == {"avg@4", "best@4", "worst@4"}
        for metric, by_compute in fits["fits"].items():
            assert len(by_compute) == measures
            for fit in by_compute.values():
                assert fit["by"] == by and set(fit["optimum"]) == set(by)
                for curve in fit["curves"]:
                    assert ("reason" in curve) if not curve["ok"] else curve["r0"] == pytest.approx(base[metric].iloc[0])

    for figure in ("fig05_frontier", "fig06_nstar", "fig12_train_pass_rates", "fig23_token_compute"):
        assert (results / f"figures/easy/bp4/{figure}.png").stat().st_size > 5000
        assert (results / f"figures/easy/bp4/{figure}.pdf").stat().st_size > 5000
    assert (results / "figures/easy/batch8/fig08_fixed_batch_optimum.png").exists()
    assert (results / "figures/easy/joint/fig10_joint_frontier.png").exists()
    assert (results / "figures/easy/joint/fig11_joint_optimum.png").exists()
    assert (results / "figures/easy/fig07_nstar_by_metric.png").exists()
    assert (results / "figures/easy/fig09_sensitivity.png").exists()
    advice = json.loads((results / "recommendations/easy.json").read_text())
    assert [a["compute"] for a in advice] == [128, 4096]
    beyond = advice[1]
    assert "extrapolation" in " ".join(beyond["warnings"]) if "warnings" in beyond else "outside the measured range" in beyond["error"]
    for study_name in ("bp4", "batch8", "joint"):
        assert (results / f"figures/easy/{study_name}/fig_extrapolation.png").exists()

    index = (results / "README.md").read_text()
    assert "fig05_frontier" in index and "problem_difficulty.parquet" in index
    produced = [p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert [p for p in produced if describe_artifact(p) is None] == []

    logs = {p.relative_to(study / "logs").parts[0].removesuffix(".log") for p in (study / "logs").rglob("*.log")}
    assert {"pretrain_base_model", "score_difficulty", "train_grpo", "evaluate_run", "fit_study", "plot_study_figure"} <= logs


@pytest.mark.slow
def test_second_run_has_nothing_to_do(study: Path) -> None:
    result = snakemake(study, "-n")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


@pytest.mark.slow
def test_a_new_device_layout_reruns_no_training(study: Path) -> None:
    layout = (
        "training:\n  per_device_batch_max: 2\n  activation_checkpointing: true\n  resume_every_steps: 2\n"
        "  time_limit_margin: 30\n  report_to: tensorboard\n"
    )
    (study / "layout.yaml").write_text(layout)
    result = snakemake(study, "-n", configfiles=(MICRO, "layout.yaml"))
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr
    (study / "recipe.yaml").write_text("training:\n  warmup_steps: 3\n")
    result = snakemake(study, "-n", configfiles=(MICRO, "recipe.yaml"))
    assert result.returncode == 0 and "train_grpo" in result.stdout


@pytest.mark.slow
def test_a_second_results_root_is_a_separate_study_beside_the_first(study: Path) -> None:
    """Another base model's study (its own `results_root`) plans every job anew, under its own folders."""
    (study / "other_root.yaml").write_text("results_root: results_other_model\n")
    result = snakemake(study, "-n", "--quiet", "all", configfiles=(MICRO, "other_root.yaml"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "train_grpo" in result.stdout and "pretrain_base_model" in result.stdout
    detailed = snakemake(study, "-n", "-p", configfiles=(MICRO, "other_root.yaml"))
    text = detailed.stdout + detailed.stderr
    assert "results_other_model/fits/easy/bp4/fits.json" in text
    assert "logs/results_other_model/train_grpo/easy/" in text
    assert "results/fits/" not in text.replace("results_other_model/fits/", "")
    assert snakemake(study, "-n").stdout.count("train_grpo") == 0


@pytest.mark.slow
def test_a_plotting_option_reruns_only_that_figure(study: Path) -> None:
    (study / "style.yaml").write_text("figures:\n  palette: magma\n")
    frontier = study / "results/figures/easy/bp4/fig05_frontier.png"
    nstar = study / "results/figures/easy/bp4/fig06_nstar.png"
    before = frontier.stat().st_mtime_ns, nstar.stat().st_mtime_ns
    result = snakemake(study, "fig05_frontier", configfiles=(MICRO, "style.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    ran = {line.split()[-1].rstrip(":") for line in result.stderr.splitlines() if line.startswith(("rule ", "localrule "))}
    assert ran == {"plot_study_figure", "fig05_frontier"}
    assert frontier.stat().st_mtime_ns > before[0] and nstar.stat().st_mtime_ns == before[1]


@pytest.mark.slow
def test_report_bundles_every_figure(study: Path) -> None:
    result = snakemake(study, "--report", "report.zip")
    assert result.returncode == 0, result.stderr[-3000:]
    with zipfile.ZipFile(study / "report.zip") as bundle:
        names = bundle.namelist()
    for figure in ("fig05_frontier", "fig06_nstar", "fig08_fixed_batch_optimum", "fig10_joint_frontier", "fig09_sensitivity"):
        assert any(name.endswith(f"{figure}.png") for name in names), figure


ABLATIONS = """
recipes:
  zv_full: {kl_coef: 0.001, entropy_coef: 0.001, zero_variance_filter: full}
  zv_regularizers: {kl_coef: 0.001, entropy_coef: 0.001, zero_variance_filter: regularizers}
ablations:
  regularization:
    kind: regularization
    grid: [{problem_sets: [easy], b_problem: [4], n: [2], seeds: [0], recipes: [kl_entropy, zv_full, zv_regularizers]}]
  learning_rate:
    kind: learning_rate
    grid:
      - {problem_sets: [easy], b_problem: [4], n: [2], seeds: [0], lr: [{batch_ref: 8}, {batch_ref: 8, base: 0.001}]}
      - {problem_sets: [easy], b_problem: [4], n: [4], seeds: [0], lr: [{rule: linear}]}
  decoupled:
    kind: decoupled_baseline
    grid:
      - {problem_sets: [easy], b_problem: [4], n: [2, 4], seeds: [0]}
      - {problem_sets: [easy], b_problem: [4], n: [2], n_baseline: [4], seeds: [0]}
"""


@pytest.mark.slow
def test_ablations_rerun_nothing_finished_enter_no_fit_and_draw_their_figures(study: Path) -> None:
    assert snakemake(study).returncode == 0  # the micro study up to date (earlier tests restyled a figure)
    (study / "ablations.yaml").write_text(ABLATIONS)
    configs = (MICRO, "ablations.yaml")
    planned = snakemake(study, "-n", configfiles=configs)
    assert planned.returncode == 0, planned.stderr[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in planned.stdout.splitlines() if line[:1].isalpha() and
            len(line.split()) == 2 and line.split()[1].isdigit()}  # fmt: skip
    # Six new runs (bp4_n2 and bp4_n4 are the grid's: shared, not retrained); no fit is redone.
    assert jobs["train_grpo"] == 6 and jobs["evaluate_run"] == 6, planned.stdout[-3000:]
    assert set(jobs) == {"train_grpo", "evaluate_run", "gather_evaluations", "plot_recipe_ablation_figure", "write_results_index",
                         "all", "total"}, jobs  # fmt: skip
    result = snakemake(study, configfiles=configs)
    assert result.returncode == 0, result.stderr[-4000:]
    results = study / "results"
    for folder, figures in {"regularization": ["fig03_training_health"],
                            "learning_rate": ["fig03_training_health", "fig04_learning_rate"],
                            "decoupled": ["fig03_training_health", "fig22_decoupled_baseline"]}.items():  # fmt: skip
        for figure in figures:
            assert (results / f"figures/easy/{folder}/{figure}.png").stat().st_size > 5000, (folder, figure)
    decoupled = pd.read_parquet(results / "train/easy/bp4_n2_seed0_baseline4/train_log.parquet")
    assert (decoupled["compute_rollouts"] == decoupled["step"] * 4 * 4).all()  # every sampled rollout counts
    filtered = pd.read_parquet(results / "train/easy/bp4_n2_seed0_recipe-zv_full/train_log.parquet")
    assert filtered[["reward", "entropy", "kl", "frac_reward_zero_std"]].notna().all().all()
    evals = pd.read_csv(results / "evaluation/evals.csv")
    assert set(evals.loc[evals["recipe"].notna(), "run"]) == {"bp4_n2_seed0_recipe-zv_full", "bp4_n2_seed0_recipe-zv_regularizers"}
    settings = json.loads((results / "train/easy/bp4_n4_seed0_lr-linear-3e-3-ref128/run_settings.json").read_text())
    assert settings["spec"]["lr_rule"] == "linear" and settings["point"]["lr_rule"] == "linear"
    produced = [p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert [p for p in produced if describe_artifact(p) is None] == []


ADAPTIVE = ".test/config_micro/adaptive.yaml"


def test_an_adaptive_sweep_decides_its_round_and_its_runs_equal_the_full_grids(
    finished_micro_study: Path, tmp_path: Path
) -> None:
    """The micro study's fixed-B_problem study as an adaptive sweep (n = 2, 4, 8; rungs C = 16 and 64), in a
    copy of the finished micro study without the runs it adapts (its base model and sets are reused): one
    decision per round, each rung evaluating only its new checkpoints, and runs that end equal to the
    full grid's (the finished micro study's) wherever the adaptive sweep ran them to the end."""
    study = finished_micro_study
    workdir = copy_of_study(study, tmp_path / "workdir")
    for n in (2, 4):
        for stage in ("train", "evaluation"):
            shutil.rmtree(workdir / f"results/{stage}/easy/bp4_n{n}_seed0")
    shutil.rmtree(workdir / "results/fits/easy/bp4")
    configs = (MICRO, ADAPTIVE)
    result = snakemake(workdir, configfiles=configs)
    assert result.returncode == 0, result.stderr[-4000:]
    results = workdir / "results"
    round0 = json.loads((results / "sweep/easy/bp4/round0.json").read_text())
    assert {d["n"] for d in round0["decisions"]} == {2, 4, 8} and round0["cap"] == 16
    assert round0["arms"]["8"] == {"rung": 0, "steps": 0, "active": True}  # n = 8's first step costs 32
    assert round0["prior"]["source"] == "config" and round0["prior"]["status"] in ("followed", "fallen back")
    summary = json.loads((results / "sweep/easy/bp4/summary.json").read_text())
    assert summary["rungs"] == [16.0, 64.0] and summary["rollouts_full_grid"] == 3 * 64
    for arm in summary["arms"]:
        reached = "stopped" not in arm
        assert (arm["compute_reached"] == arm["compute_full"]) == reached, arm
    assert summary["rollouts_spent"] == sum(arm["compute_reached"] for arm in summary["arms"])
    assert (results / "sweep/easy/bp4/frontier_stops.png").stat().st_size > 10_000
    assert (results / "fits/easy/bp4/fits.json").exists() and (results / "figures/easy/bp4/fig06_nstar.png").exists()
    rung0 = pd.read_parquet(results / "evaluation/easy/bp4_n2_seed0/rung0/evals.parquet")
    rung1 = pd.read_parquet(results / "evaluation/easy/bp4_n2_seed0/rung1/evals.parquet")
    assert rung0["step"].tolist() == [2] and rung1["step"].tolist() == [3, 5, 8]
    for arm in (a for a in summary["arms"] if a["n"] in (2, 4) and "stopped" not in a):
        run = f"bp4_n{arm['n']}_seed0"
        for table in (f"evaluation/easy/{run}/evals.parquet", f"evaluation/easy/{run}/val_counts.parquet",
                      f"train/easy/{run}/train_log.parquet"):  # fmt: skip
            pd.testing.assert_frame_equal(
                pd.read_parquet(results / table), pd.read_parquet(study / "results" / table), obj=table
            )
    assert "Nothing to be done" in snakemake(workdir, "-n", configfiles=configs).stdout


DATA = ".test/config_micro/data_ablations.yaml"


@pytest.mark.slow
def test_data_ablation_sets_rerun_nothing_finished_and_draw_figures_14_15_20(study: Path) -> None:
    assert snakemake(study).returncode == 0  # the micro study up to date
    # The data sets and their grid block added to the micro study's own grid and studies.
    micro, data = (yaml.safe_load((study / path).read_text()) for path in (MICRO, DATA))
    data["grid"] = micro["grid"] + [{**data["grid"][0], "n": [4, 8]}]  # no B = 8 curve: batch8 skips them
    data["studies"] = micro["studies"]
    del data["fits"], data["recommend"]  # the micro study's fits and budgets, unchanged
    (study / "data.yaml").write_text(yaml.safe_dump(data))
    configs = (MICRO, "data.yaml")
    planned = snakemake(study, "-n", configfiles=configs)
    assert planned.returncode == 0, planned.stderr[-3000:]
    # The finished Easy set, runs and fits are not redone: only the new sets' builds, runs, fits and figures.
    outputs = re.findall(r"rule (\w+):\n(?:    .*\n)*?    output: (.*)\n", planned.stdout)
    redone = [(rule, out) for rule, out in outputs if "/easy/" in out and rule != "plot_data_figure"]
    assert {"train_grpo", "score_pass_at", "build_problem_sets"} <= {rule for rule, _ in outputs}
    assert redone == [], redone
    assert planned.stdout.count("rule score_pass_at:") == 1
    result = snakemake(study, configfiles=configs)
    assert result.returncode == 0, result.stderr[-4000:]
    results = study / "results"
    for name in ("fig14_train_vs_val_sweep", "fig15_mixtures_bp4", "fig20_extremely_hard_xhard",
                 "fig21_out_of_domain_three_digits"):  # fmt: skip
        assert (results / f"figures/data/{name}.png").stat().st_size > 10_000, name
    # The mixture's runs on Easy's and Hard's validation sets and on the out-of-domain table, fitted and drawn.
    for other, size in (("easy", 40), ("hard", 20), ("three_digits", 30)):
        counts = pd.read_parquet(results / f"evaluation/mix/bp4_n4_seed0/on_{other}/val_counts.parquet")
        assert counts.groupby("step")["id"].count().eq(size).all() and (counts["evaluated_on"] == other).all()
        assert (results / f"fits/mix/bp4/on_{other}/fits.json").exists()
        assert (results / f"figures/mix/bp4/on_{other}/fig05_frontier.png").exists()
    staged = json.loads((results / "difficulty/pass_at32.json").read_text())
    assert staged["rollouts_saved"] == staged["rollouts_k_for_all"] - staged["rollouts_sampled"] > 0
    xhard = pd.read_parquet(results / "problem_sets/xhard/train.parquet")
    rates = pd.read_parquet(results / "difficulty/pass_at32.parquet").set_index("id")
    assert (rates.loc[xhard["id"], "pass@32"] == 0).all()
    small, large = (pd.read_parquet(results / f"problem_sets/sweep_size{n}/train.parquet") for n in (20, 40))
    assert large["id"].tolist()[:20] == small["id"].tolist()
    vals = {i for path in results.glob("problem_sets/*/val.parquet") for i in pd.read_parquet(path)["id"]}
    trains = {i for path in results.glob("problem_sets/*/train.parquet") for i in pd.read_parquet(path)["id"]}
    assert not vals & trains
    produced = [p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert [p for p in produced if describe_artifact(p) is None] == []


def test_data_ablation_overlay_plans_figures_14_15_20(tmp_path: Path) -> None:
    workdir = scratch_workflow(tmp_path)
    result = snakemake(workdir, "-n", "fig14_train_vs_val", "fig15_mixtures", "fig20_extremely_hard",
                       "fig21_out_of_domain", configfiles=(MICRO, DATA))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for target in ("fig14_train_vs_val_sweep.png", "fig15_mixtures_bp4.png", "fig20_extremely_hard_xhard.png",
                   "fig21_out_of_domain_three_digits.png"):  # fmt: skip
        assert f"results/figures/data/{target}" in result.stdout
    assert result.stdout.count("rule score_pass_at:") == 1
    assert result.stdout.count("rule fit_train_metrics:") == 2  # the size sweep's two sizes
    # Fig. 15 draws the mixture on its own, Easy's and Hard's validation sets; Fig. 21 on the 3-digit table.
    assert result.stdout.count("rule evaluate_run_on:") == 6 and result.stdout.count("rule import_out_of_domain:") == 1


def test_guru_math_imports_through_its_rule_and_reports_excluded_rows(tmp_path: Path) -> None:
    workdir = scratch_workflow(tmp_path)
    pd.DataFrame(guru_rows()).to_parquet(workdir / "guru.parquet")
    (workdir / "guru.yaml").write_text(
        "problems:\n  source: table\n  checker: math_verify\n"
        "  table: {path: guru.parquet, split: train, schema: guru, data_files: null}\n"
        "base_model:\n  pretrained: models/never-loaded-by-this-target\n"
    )
    result = snakemake(workdir, "results/problems/pool.parquet", configfiles=(MICRO, "guru.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    pool = pd.read_parquet(workdir / "results/problems/pool.parquet")
    excluded = pd.read_parquet(workdir / "results/problems/excluded.parquet")
    assert len(pool) == 3 and excluded["id"].tolist() == [f"math__deepscaler-{row}" for row in (2, 3, 4, 5)]
    log = (workdir / "logs/import_problem_table.log").read_text()
    assert "excluded math__deepscaler-3 (row 3): answer '?' cannot be read by math_verify" in log
    assert "imported 3 problems from guru.parquet; excluded 4 rows" in log
