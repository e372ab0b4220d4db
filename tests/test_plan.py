"""`isocompute plan`: the jobs and GPU-hours Snakemake's own dry run of a preset requests, per rule."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from isocompute.cli import main
from isocompute.plan.requests import (
    MEASURED_SHARES,
    JobRequest,
    PlanError,
    adaptive_plan,
    format_table,
    plan,
    plan_report,
    summarize,
)

PAPER = REPO / "config" / "presets" / "paper.yaml"


@pytest.fixture(scope="module")
def paper() -> pd.DataFrame:
    return plan([PAPER], directory=REPO).set_index("rule")


def test_paper_preset_gpu_hours(paper: pd.DataFrame) -> None:
    train = paper.loc["train_grpo"]
    assert train["jobs"] == 66 and train["gpus_per_job"] == 8 and train["runtime_min"] == 2880
    assert train["gpu_hours"] == pytest.approx(66 * 8 * 2880 / 60)
    assert paper.loc["evaluate_run", "jobs"] == 66
    assert paper.loc["evaluate_run", "gpu_hours"] == pytest.approx(66 * 1 * 720 / 60)
    score = paper.loc["score_difficulty"]
    assert (score["jobs"], score["gpus_per_job"], score["runtime_min"]) == (32, 1, 240)
    assert score["gpu_hours"] == pytest.approx(32 * 1 * 240 / 60)
    # The gathers, fits and figures are localrules and `all` has no action: listed, but no GPU.
    for rule in ["gather_difficulty", "fit_study", "plot_study_figure", "all"]:
        assert paper.loc[rule, "local"] and paper.loc[rule, "gpu_hours"] == 0
    assert not paper.loc["train_grpo", "local"]


def test_total_line_is_the_sum_of_the_rows(paper: pd.DataFrame) -> None:
    text = format_table(paper.reset_index())
    total = text.splitlines()[-1].split()
    # 297: one build_problem_sets job per set (Easy, Hard); 16 studies' diagnostics, tabulated and drawn
    assert total[0] == "total" and int(total[1]) == paper["jobs"].sum() == 297
    assert float(total[-1].replace(",", "")) == pytest.approx(paper["gpu_hours"].sum())
    assert paper["gpu_hours"].sum() == pytest.approx(66 * 8 * 48 + 66 * 12 + 32 * 4 + 2 * 1)


def test_embedded_default_requests_no_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--directory", str(REPO), "--snakefile", str(REPO / "Snakefile")]) == 0
    lines = capsys.readouterr().out.splitlines()
    train = next(line.split() for line in lines if line.startswith("train_grpo "))
    # Easy: five n at B_problem = 16 and three at B = 128 (n = 8 shared); Hard: three n at B_problem = 16.
    assert train[1] == "10"
    total = next(line.split() for line in lines if line.startswith("total "))
    assert total[-1] == "0.0"
    # The plan ends with the adaptive rule's estimate on the same grid: nothing on a GPU, so nothing to save.
    assert lines[-2].startswith("the adaptive rule (sweep.mode: adaptive, no prior) on the ") and "against the full grid's 0" in lines[-2]


def test_overlaid_presets_plan_the_last_word() -> None:
    rows = plan([PAPER, REPO / "config" / "presets" / "qwen3_4b_instruct.yaml"], directory=REPO).set_index(
        "rule"
    )
    assert rows.loc["train_grpo", "jobs"] == 12  # 2 sets x 6 values of n at B_problem = 32


def test_bad_key_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  learning_rate: 0.1\n")
    with pytest.raises(PlanError, match="learning_rate"):
        plan([bad], directory=REPO)
    assert main(["plan", "--configfile", str(bad), "--directory", str(REPO)]) == 2
    assert "learning_rate" in capsys.readouterr().err


def test_bad_key_from_the_command_line_exits_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  learning_rate: 0.1\n")
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())", "plan", "--configfile", str(bad)],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "learning_rate" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_missing_config_file_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--configfile", "no/such.yaml", "--directory", str(REPO)]) == 2
    assert "no/such.yaml" in capsys.readouterr().err


def test_summarize_counts_local_jobs_at_zero() -> None:
    table = summarize([
        JobRequest("train", local=False, gpus=2, runtime_min=30),
        JobRequest("train", local=False, gpus=4, runtime_min=60),
        JobRequest("gather", local=True, gpus=1, runtime_min=600),
    ]).set_index("rule")  # fmt: skip
    assert table.loc["train", "jobs"] == 2 and table.loc["train", "gpus_per_job"] == 4
    assert table.loc["train", "gpu_hours"] == pytest.approx(2 * 0.5 + 4 * 1)
    assert table.loc["gather", "gpu_hours"] == 0 and table.loc["gather", "gpus_per_job"] == 0


def test_paper_ablations_are_counted_over_the_paper_preset(paper: pd.DataFrame) -> None:
    rows = plan([PAPER, REPO / "config" / "presets" / "paper_ablations.yaml"], directory=REPO).set_index("rule")
    # 13 runs of their own (the rest are the grid's), each trained and evaluated like a grid run.
    assert rows.loc["train_grpo", "jobs"] == paper.loc["train_grpo", "jobs"] + 13
    assert rows.loc["evaluate_run", "jobs"] == paper.loc["evaluate_run", "jobs"] + 13
    added = rows["gpu_hours"].sum() - paper["gpu_hours"].sum()
    assert added == pytest.approx(13 * (8 * 2880 + 1 * 720) / 60)
    assert rows.loc["plot_recipe_ablation_figure", "jobs"] == 6 and rows.loc["fit_study", "jobs"] == paper.loc["fit_study", "jobs"]


def test_paper_data_ablations_are_counted_over_the_paper_preset(paper: pd.DataFrame) -> None:
    rows = plan([PAPER, REPO / "config" / "presets" / "paper_data_ablations.yaml"], directory=REPO).set_index("rule")
    # Six new sets (extremely hard, two mixtures, three sizes) x five n; the paper's grid is unchanged.
    assert rows.loc["train_grpo", "jobs"] == paper.loc["train_grpo", "jobs"] + 30
    assert rows.loc["evaluate_run", "jobs"] == paper.loc["evaluate_run", "jobs"] + 30
    # Each mixture's five runs on Easy's and on Hard's validation sets; one staged pass@128 on one GPU.
    assert rows.loc["evaluate_run_on", "jobs"] == 20 and rows.loc["score_pass_at", "jobs"] == 1
    added = rows["gpu_hours"].sum() - paper["gpu_hours"].sum()
    assert added == pytest.approx(30 * (8 * 2880 + 720) / 60 + 20 * 720 / 60 + 480 / 60 + 6 * 60 / 60)
    assert rows.loc["plot_data_figure", "jobs"] == 3


def test_a_gpu_job_of_a_rule_status_would_not_count_is_refused(tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(
        'rule all:\n    input: "done"\n\n'
        'rule unregistered_gpu_job:\n    output: "done"\n    resources: gpu=1, runtime=10\n    shell: "touch {output}"\n'
    )
    with pytest.raises(PlanError, match="rule unregistered_gpu_job asks for 1 GPU.*not in .*CLUSTER_RULES"):
        plan(snakefile=tmp_path / "Snakefile", directory=tmp_path)


def test_an_adaptive_sweep_plans_its_worst_and_expected_cases(
    paper: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The paper's fixed-B_problem studies (B_problem = 1,024 aside: two arms on Hard) swept adaptively: the
    worst case is the full grid's jobs, the expected one its arms' training scaled by a replay's share."""
    adaptive = tmp_path / "adaptive.yaml"
    adaptive.write_text(
        "studies: {fixed_b_problem: [32, 64, 128, 256, 512], fixed_batch: [], joint: false}\nsweep: {mode: adaptive}\n"
    )
    replay = tmp_path / "replay.json"
    replay.write_text('{"rollouts_spent": 3.0, "rollouts_full_grid": 4.0}')
    cases = adaptive_plan([PAPER, adaptive], directory=REPO, replay=replay)
    assert cases is not None and cases.share == 0.75
    worst = cases.worst.set_index("rule")
    assert worst.loc["train_grpo", "jobs"] == paper.loc["train_grpo", "jobs"] == 66
    # 60 adaptive runs (the six at B_problem = 1,024 train as the full grid), 8 GPUs x 48 h each.
    assert cases.adaptive_training_gpu_hours == pytest.approx(60 * 8 * 48)
    assert cases.expected_gpu_hours == pytest.approx(worst["gpu_hours"].sum() - 0.25 * 60 * 8 * 48)
    assert main(["plan", "--configfile", str(PAPER), str(adaptive), "--directory", str(REPO), "--replay", str(replay)]) == 0
    out = capsys.readouterr().out
    assert "worst case: every arm to C_max" in out and f"expected case: {cases.expected_gpu_hours:,.1f} GPU-hours" in out
    assert f"75%, the share of the full grid's rollouts spent in {replay}" in out
    replay.write_text('{"rollouts_spent": 3.0}')
    assert main(["plan", "--configfile", str(PAPER), str(adaptive), "--directory", str(REPO), "--replay", str(replay)]) == 2
    assert "missing ['rollouts_full_grid']" in capsys.readouterr().err
    assert main(["plan", "--directory", str(REPO), "--replay", str(replay)]) == 2
    assert "the config runs the full grid" in capsys.readouterr().err


def test_the_paper_preset_s_plan_gives_the_adaptive_rule_s_expected_gpu_hours_beside_the_full_grid_s(
    paper: pd.DataFrame, tmp_path: Path
) -> None:
    """The full grid's plan ends with the rule's expected cost on the same grid: the training of the 64 runs of
    the fixed-B_problem studies with three arms or more (Hard's B_problem = 1,024 has two: n = 8, 16) cut to the
    shares measured on the realistic replay tables, their mean and range, said to be those; an adaptive config
    without a replay or a prior gets the same shares as its expected case."""
    text = plan_report([PAPER], directory=REPO)
    total = paper["gpu_hours"].sum()
    training = 64 * 8 * 48
    mean, low, high = MEASURED_SHARES
    assert f"on the 64 runs of the fixed-B_problem studies with three arms or more ({training:,.0f} of the {total:,.0f}" in text
    expected = [total - (1 - share) * training for share in (mean, low, high)]
    assert (f"expected {expected[0]:,.0f} GPU-hours ({expected[1]:,.0f} to {expected[2]:,.0f}) against the full grid's "
            f"{total:,.0f}") in text  # fmt: skip
    assert f"mean {mean:.0%}, {low:.0%} to {high:.0%} over 9 draws" in text and "not a replay of this study" in text
    adaptive = tmp_path / "adaptive.yaml"
    adaptive.write_text(
        "studies: {fixed_b_problem: [32, 64, 128, 256, 512], fixed_batch: [], joint: false}\nsweep: {mode: adaptive}\n"
    )
    cases = adaptive_plan([PAPER, adaptive], directory=REPO)
    assert cases is not None and cases.share == mean and cases.share_range == (low, high)
    assert "realistic replay tables" in cases.source


def test_a_new_models_sweep_with_the_paper_law_as_its_prior_plans_its_expected_case(capsys: pytest.CaptureFixture[str]) -> None:
    """The paper's Qwen3-4B check (n 8-256 at B_problem = 32 on Easy and Hard) swept adaptively with the paper's
    Qwen2.5-7B laws as the prior: the expected case is the prior's plan, each arm to where its rules stop it."""
    files = [PAPER, REPO / "config/presets/qwen3_4b_instruct.yaml", REPO / "config/presets/adaptive_prior.yaml"]
    cases = adaptive_plan(files, directory=REPO)
    assert cases is not None and cases.share is not None and 0.2 < cases.share < 1.0
    assert "easy: paper_easy" in cases.source and "hard: paper_hard" in cases.source
    assert cases.expected_gpu_hours < cases.worst["gpu_hours"].sum()
    step_model = REPO / "config/step_models/qwen2.5-7b-h100.yaml"
    args = ["plan", "--configfile", *map(str, files), "--directory", str(REPO), "--step-model", str(step_model)]
    assert main(args) == 0
    out = capsys.readouterr().out
    print(out)
    assert f"expected case: {cases.expected_gpu_hours:,.1f} GPU-hours" in out and "the prior's plan" in out
    assert "what the training runs need" in out and "with the prior's plan: " in out
