"""`isocompute import` and the commands that read a source directly: the real readers on files the real
writers made (TRL's GRPOTrainer logging to TensorBoard and to an MLflow store, torch's SummaryWriter, the
mlflow client), W&B's exports written in the web app's and the public API's formats from a known table, and
the errors a bad source gets."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from isocompute.cli import main
from isocompute.fits.forms import reward_curve
from isocompute.sources import import_source, read_source
from isocompute.sources.table import column_map
from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training.run_spec import SINGLE_PROCESS, RunSpec

B_PROBLEM = 32
CURVES = {8: (0.3, 0.55, 3.5, 1.5), 32: (0.3, 0.62, 4.5, 1.5), 128: (0.3, 0.70, 5.5, 1.5)}
METRIC = "val-core/math/acc/mean@4"
RUN_MAP = "run,n,b_problem,seed\n" + "".join(f"sweep-{n},{n},{B_PROBLEM},0\n" for n in CURVES)


def known_sweep() -> pd.DataFrame:
    """A sweep whose every n runs for the same steps (so small n end early in compute), its evaluation every
    few steps, its completion length logged at every step: the table its logs must import back to."""
    rng = np.random.default_rng(0)
    steps = np.unique(np.round(np.geomspace(1, 4000, 12)).astype(int))
    rows = []
    for n, params in CURVES.items():
        lengths = 20 + rng.integers(0, 10, size=steps.max())
        tokens = np.cumsum(lengths * B_PROBLEM * n)
        for step in steps:
            rollouts = int(step) * B_PROBLEM * n
            reward = float(np.clip(reward_curve(np.log10(rollouts), *params) + rng.normal(0, 0.01), 0, 1))
            rows.append({"run": f"sweep-{n}", "n": n, "b_problem": B_PROBLEM, "seed": 0, "step": int(step),
                         "compute_rollouts": rollouts, "compute_tokens": float(tokens[step - 1]), METRIC: reward,
                         "lengths": lengths})  # fmt: skip
    return pd.DataFrame(rows)


def expected(sweep: pd.DataFrame) -> pd.DataFrame:
    return sweep.drop(columns="lengths").reset_index(drop=True)


def write_panel_export(sweep: pd.DataFrame, path: Path, axis: str = "Step") -> None:
    """The sweep's metric as the W&B web app's panel "Export CSV" writes it: `Step`, then per run
    `<run> - <metric>` with the band `__MIN` and `__MAX`, blank where the run has no value."""
    wide = pd.DataFrame({axis: sorted(set(sweep["step"]) | {5000})})  # a step no run logged: blanks only
    for run, rows in sweep.groupby("run"):
        values = wide[axis].map(rows.set_index("step")[METRIC])
        for suffix, shift in (("", 0.0), ("__MIN", -0.01), ("__MAX", 0.01)):
            wide[f"{run} - {METRIC}{suffix}"] = values + shift
    wide.to_csv(path, index=False)


@pytest.mark.parametrize("axis", ["Step", "train/global_step"])
def test_a_wandb_panel_export_imports_to_the_table_it_came_from(tmp_path: Path, axis: str) -> None:
    sweep = known_sweep()
    write_panel_export(sweep, tmp_path / "panel.csv", axis)
    (tmp_path / "runs.csv").write_text(RUN_MAP)
    table = read_source([str(tmp_path / "panel.csv")], metrics=[METRIC], run_map=str(tmp_path / "runs.csv"))
    want = expected(sweep).assign(compute_tokens=lambda t: t["compute_rollouts"].astype(float))
    pd.testing.assert_frame_equal(table, want, check_dtype=False)


def write_wandb_histories(sweep: pd.DataFrame, folder: Path) -> None:
    """Each run as W&B's public API returns it, saved (`run.history()` to JSON lines, one row per logged
    step, the evaluation every few steps), beside its `config.yaml` as W&B writes a verl run's config."""
    for run, rows in sweep.groupby("run"):
        lengths = rows["lengths"].iloc[0]
        history = pd.DataFrame({"_step": range(1, len(lengths) + 1), "_runtime": 1.0, "_timestamp": 1.7e9,
                                "response_length/mean": lengths})  # fmt: skip
        history[METRIC] = history["_step"].map(rows.set_index("step")[METRIC])
        (folder / run).mkdir(parents=True)
        history.to_json(folder / run / "history.jsonl", orient="records", lines=True)
        config = {
            "wandb_version": 1,
            "_wandb": {"desc": None, "value": {"cli_version": "0.31.0"}},
            "actor_rollout_ref": {
                "desc": None,
                "value": {"rollout": {"n": int(rows["n"].iloc[0]), "temperature": 1.0}},
            },
            "data": {"desc": None, "value": {"train_batch_size": B_PROBLEM, "max_response_length": 1024}},
            "trainer": {"desc": None, "value": {"test_freq": 5, "logger": ["console", "wandb"]}},
        }
        (folder / run / "config.yaml").write_text(yaml.safe_dump(config))


def test_wandb_histories_with_verl_configs_import_to_the_table_they_came_from(tmp_path: Path) -> None:
    sweep = known_sweep()
    write_wandb_histories(sweep, tmp_path / "wandb")
    imported = import_source([str(tmp_path / "wandb")], metrics=[METRIC])
    pd.testing.assert_frame_equal(
        imported.table.drop(columns=[]), expected(sweep).drop(columns="seed"), check_dtype=False
    )
    assert imported.settings["sweep-8"].origin == {"n": "config (verl)", "b_problem": "config (verl)"}
    assert any(
        "logged 'response_length/mean' x rollouts, cumulated (3 of 3 runs)" in line
        for line in imported.mapping()
    )


def test_a_long_table_with_a_column_map(tmp_path: Path) -> None:
    sweep = expected(known_sweep()).rename(columns={"run": "experiment", "step": "global_step"})
    sweep.drop(columns=["compute_rollouts", "compute_tokens"]).to_parquet(tmp_path / "log.parquet")
    table = read_source(
        [str(tmp_path / "log.parquet")],
        "table",
        [METRIC],
        columns=column_map("run=experiment,step=global_step"),
    )
    assert table["compute_rollouts"].tolist() == sweep["compute_rollouts"].tolist()
    assert table[METRIC].tolist() == sweep[METRIC].tolist()


def test_fit_and_recommend_read_a_source_directly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = known_sweep()
    write_panel_export(sweep, tmp_path / "panel.csv")
    source = [str(tmp_path / "panel.csv"), "--metric", METRIC, "--name-pattern", r"sweep-(?P<n>\d+)"]
    # b_problem is in no name: the pattern alone leaves it out, and the error names the run.
    assert main(["fit", *source, "--out", str(tmp_path / "fits.json")]) == 2
    assert "run 'sweep-128' has no b_problem" in capsys.readouterr().err
    (tmp_path / "runs.csv").write_text(RUN_MAP)
    assert main(["import", str(tmp_path / "panel.csv"), "--metric", METRIC, "--map", str(tmp_path / "runs.csv"),
                 "--out", str(tmp_path / "evals.csv")]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "run 'sweep-8': n 8, b_problem 32, seed 0 (n, b_problem, seed from --map)" in printed
    assert "runs 3; n [8, 32, 128]; b_problem [32]; seeds [0]" in printed
    assert f"metric columns ['{METRIC}']" in printed
    assert "tokens a copy of compute_rollouts (no completion length logged) (3 of 3 runs)" in printed
    fit_args = ["--map", str(tmp_path / "runs.csv"), "--bootstrap", "5"]
    assert main(["fit", *source, *fit_args, "--out", str(tmp_path / "fits.json")]) == 0
    assert (
        main(
            [
                "fit",
                str(tmp_path / "evals.csv"),
                "--metric",
                METRIC,
                "--bootstrap",
                "5",
                "--out",
                str(tmp_path / "same.json"),
            ]
        )
        == 0
    )
    direct, imported = (json.loads((tmp_path / name).read_text()) for name in ("fits.json", "same.json"))
    assert direct["fits"] == imported["fits"]
    assert "run 'sweep-128': n 128" in capsys.readouterr().err  # the mapping, apart from the fit's output
    assert (
        main(["recommend", *source, "--map", str(tmp_path / "runs.csv"), "--compute", "1e6", "--json"]) == 0
    )
    advice = json.loads(capsys.readouterr().out)
    assert advice["compute"] == 1e6 and advice["metric"] == METRIC and advice["b_problem"] == B_PROBLEM


def write_event_files(sweep: pd.DataFrame, folder: Path) -> None:
    """Each run's metric written by torch's TensorBoard writer, a folder per run."""
    from torch.utils.tensorboard import SummaryWriter

    for run, rows in sweep.groupby("run"):
        with SummaryWriter(str(folder / run)) as writer:
            for _, row in rows.iterrows():
                writer.add_scalar(METRIC, row[METRIC], int(row["step"]))


def test_tensorboard_files_of_torch_summary_writer(tmp_path: Path) -> None:
    sweep = known_sweep()
    write_event_files(sweep, tmp_path / "tb")
    (tmp_path / "runs.csv").write_text(RUN_MAP.replace("sweep-128,128,32,0\n", ""))
    imported = import_source([str(tmp_path / "tb")], metrics=[METRIC], run_map=str(tmp_path / "runs.csv"))
    assert imported.skipped == ["sweep-128"]
    assert "skipped (not in --map): ['sweep-128']" in imported.mapping()
    want = expected(sweep[sweep["n"] < 128]).assign(
        compute_tokens=lambda t: t["compute_rollouts"].astype(float)
    )
    # TensorBoard keeps float32.
    pd.testing.assert_frame_equal(imported.table, want, check_dtype=False, atol=1e-6)


MLFLOW_METRIC = "val_acc"  # MLflow refuses '@' in a metric's name


def write_mlflow_store(sweep: pd.DataFrame, uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run logged by the mlflow client to a folder store, with OpenRLHF's settings as its params."""
    mlflow = pytest.importorskip("mlflow")
    with monkeypatch.context() as patched:
        patched.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        patched.setenv("MLFLOW_TRACKING_URI", uri)  # not mlflow.set_tracking_uri: it would outlive the test
        for run, rows in sweep.groupby("run"):
            with mlflow.start_run(run_name=run):
                n = int(rows["n"].iloc[0])
                mlflow.log_params({"n_samples_per_prompt": n, "rollout_batch_size": B_PROBLEM, "seed": 0})
                for _, row in rows.iterrows():
                    mlflow.log_metric(MLFLOW_METRIC, row[METRIC], step=int(row["step"]))


def test_an_mlflow_store_of_the_mlflow_client_by_its_tracking_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = known_sweep()
    uri = (tmp_path / "mlruns").as_uri()
    write_mlflow_store(sweep, uri, monkeypatch)
    imported = import_source([uri], metrics=[MLFLOW_METRIC])  # the reader allows the folder store itself
    assert imported.settings["sweep-8"].origin == {
        key: "config (OpenRLHF)" for key in ("n", "b_problem", "seed")
    }
    want = expected(sweep).assign(compute_tokens=lambda t: t["compute_rollouts"].astype(float))
    pd.testing.assert_frame_equal(
        imported.table, want.rename(columns={METRIC: MLFLOW_METRIC}), check_dtype=False
    )


@pytest.mark.parametrize("kind", ["wandb-csv", "wandb-history", "tensorboard", "mlflow"])
def test_each_source_is_fitted_and_plotted_from_one_command(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = known_sweep()
    (tmp_path / "runs.csv").write_text(RUN_MAP)
    source = {
        "wandb-csv": lambda: write_panel_export(sweep, tmp_path / "source"),
        "wandb-history": lambda: write_wandb_histories(sweep, tmp_path / "source"),
        "tensorboard": lambda: write_event_files(sweep, tmp_path / "source"),
        "mlflow": lambda: write_mlflow_store(sweep, (tmp_path / "source").as_uri(), monkeypatch),
    }
    source[kind]()
    metric = MLFLOW_METRIC if kind == "mlflow" else METRIC
    flags = [
        "--format",
        kind,
        "--metric",
        metric,
        *(["--map", str(tmp_path / "runs.csv")] if kind != "wandb-history" else []),
    ]
    assert (
        main(
            [
                "fit",
                str(tmp_path / "source"),
                *flags,
                "--bootstrap",
                "5",
                "--out",
                str(tmp_path / "fits.json"),
            ]
        )
        == 0
    )
    fits = json.loads((tmp_path / "fits.json").read_text())
    assert {c["key"]["n"] for c in fits["fits"][metric]["compute_rollouts"]["curves"]} == set(CURVES)
    assert main(["plot", str(tmp_path / "fits.json"), "--out", str(tmp_path / "figures")]) == 0
    assert {"fig05_frontier.png", "fig06_nstar.png"} <= {
        path.name for path in (tmp_path / "figures").iterdir()
    }
    out = tmp_path / "replay.json"
    assert main(["replay", str(tmp_path / "source"), *flags, "--bootstrap", "3", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["rollouts_full_grid"] == sum(
        sweep.groupby("run")["compute_rollouts"].max()
    )


def test_a_real_grpo_run_logged_by_trl_imports_as_its_training_table(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One tiny GRPO run of the pipeline's own, logged by TRL to TensorBoard and to an MLflow folder store:
    each source, and the run's TRL output folder, imports to the pipeline's training table for what they
    share (the reward is the train reward: a share of the batch's rollouts, as an evaluation's metric is)."""
    from isocompute.training.trainer import train_run

    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    spec = TrainingSpec(1e-4, 64, 2, 24, 96, 3, "grpo", SamplingSpec(1.0, 1.0, 4))
    launch = dataclasses.replace(SINGLE_PROCESS, report_to=("tensorboard", "mlflow"))
    run = RunSpec(
        tiny_model, GridPoint("easy", 4, 2, 0), spec, Recipe(0.0, 0.0), str(tmp_path / "run"), launch=launch
    )
    training, _ = train_run(run, pool)
    shared = training[["step", "compute_rollouts", "compute_tokens", "reward"]]
    sources = {
        "tensorboard": ([str(tmp_path / "run" / "tensorboard")], None, "train/reward"),
        "mlflow": ([str(tmp_path / "mlruns")], None, "reward"),
        "trl": ([str(tmp_path / "run")], "trl", "reward"),
    }
    for kind, (paths, format, metric) in sources.items():
        imported = import_source(paths, format, [metric])
        table = imported.table.rename(columns={metric: "reward"})
        assert set(table["run"]) == {"easy/bp4_n2_seed0" if kind != "trl" else "run"}, kind
        assert (table[["n", "b_problem"]] == [2, 4]).all().all(), kind
        pd.testing.assert_frame_equal(table[shared.columns], shared, check_dtype=False, rtol=1e-6, obj=kind)
        assert any("tokens logged" in line for line in imported.mapping()), kind


@pytest.fixture
def panel(tmp_path: Path) -> Path:
    write_panel_export(known_sweep(), tmp_path / "panel.csv")
    (tmp_path / "runs.csv").write_text(RUN_MAP)
    return tmp_path


def test_a_run_without_n_is_refused_by_name(panel: Path) -> None:
    with pytest.raises(
        ValueError, match=r"panel.csv: run 'sweep-128' has no n and no b_problem: .* give them with --map"
    ):
        read_source([str(panel / "panel.csv")], metrics=[METRIC])


def test_runs_that_collide_are_refused_by_name(panel: Path) -> None:
    (panel / "runs.csv").write_text(RUN_MAP.replace("sweep-32,32,", "sweep-32,8,"))
    with pytest.raises(
        ValueError, match=r"runs 'sweep-32' and 'sweep-8' collide: both map to n 8, b_problem 32, seed 0"
    ):
        read_source([str(panel / "panel.csv")], metrics=[METRIC], run_map=str(panel / "runs.csv"))


def test_a_metric_outside_0_1_is_refused_with_its_run_column_and_steps(panel: Path) -> None:
    table = pd.read_csv(panel / "panel.csv")
    table.loc[3, f"sweep-32 - {METRIC}"] = 37.5  # a percentage
    table.to_csv(panel / "panel.csv", index=False)
    with pytest.raises(
        ValueError, match=rf"run 'sweep-32': column '{METRIC}' must lie in \[0, 1\] .* at step 10 \(37.5\)"
    ):
        read_source([str(panel / "panel.csv")], metrics=[METRIC], run_map=str(panel / "runs.csv"))


def test_a_missing_metric_is_refused_with_what_the_run_logs(panel: Path) -> None:
    with pytest.raises(
        ValueError,
        match=r"run 'sweep-128': missing column\(s\) 'val-core/math/acc/mean@8' \(is .* a typo\?\)",
    ):
        read_source(
            [str(panel / "panel.csv")], metrics=["val-core/math/acc/mean@8"], run_map=str(panel / "runs.csv")
        )
    with pytest.raises(
        ValueError, match=rf"name the evaluation column\(s\) with --metric; the source logs \['{METRIC}'\]"
    ):
        read_source([str(panel / "panel.csv")], run_map=str(panel / "runs.csv"))


def test_a_map_naming_an_unknown_run_is_refused(panel: Path) -> None:
    (panel / "runs.csv").write_text(RUN_MAP + "sweep-512,512,32,0\n")
    with pytest.raises(
        ValueError, match=r"runs \['sweep-512'\] are not in the source, whose runs are \['sweep-128', "
    ):
        read_source([str(panel / "panel.csv")], metrics=[METRIC], run_map=str(panel / "runs.csv"))


def test_a_folder_of_two_kinds_of_log_needs_its_format(tmp_path: Path) -> None:
    (tmp_path / "out" / "checkpoint-1").mkdir(parents=True)
    (tmp_path / "out" / "checkpoint-1" / "trainer_state.json").write_text(json.dumps({"log_history": []}))
    (tmp_path / "out" / "events.out.tfevents.1.host").write_bytes(b"")
    with pytest.raises(
        ValueError, match=r"it holds logs of \['tensorboard', 'trl'\]; name its format with --format"
    ):
        read_source([str(tmp_path / "out")], metrics=["reward"])
