"""The simulated policy as known truth: the seeds are the study's own runs, the mean and its standard error,
ties and material moves of n*, the comparison with the fits and the command's errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_simulated_policy import tiny_preset

from isocompute.cli import main
from isocompute.mechanism.simulated_study import simulate
from isocompute.mechanism.simulated_truth import (
    mean_rewards,
    read_seeds,
    run_truth,
    true_optimum,
    truth_seeds,
)


def test_truth_seeds_are_the_study_runs_under_those_seeds_and_their_mean(tmp_path: Path) -> None:
    config = tiny_preset(tmp_path / "truth")
    run_truth(config, 3, ["shared"], log=lambda _: None)
    assert truth_seeds(config, 3) == [2, 3, 4]  # after the grid's seeds 0 and 1: runs the fits never read
    seeds = read_seeds(config)
    assert set(seeds["level"]) == {"shared"} and set(seeds["seed"]) == {2, 3, 4}
    # the same runs trained as a study with grid seeds 2, 3, 4 give the same exact metric, seed by seed
    study = tiny_preset(tmp_path / "study")
    study["grid"]["seeds"] = [2, 3, 4]
    simulate(study, log=lambda _: None)
    evals = pd.read_csv(Path(study["results_root"]) / "evaluation/shared/on_train_evals.csv")
    mine = seeds[seeds["evaluated_on"] == "train"].merge(
        evals, left_on=["n", "seed", "step"], right_on=["n", "seed", "step"]
    )
    assert len(mine) == len(evals) and np.allclose(mine["reward"], mine["avg@4"], rtol=0, atol=1e-12)
    means = mean_rewards(seeds)
    expected = evals.groupby(["n", "compute_rollouts"])["avg@4"].agg(["mean", "std"])
    train = means[means["evaluated_on"] == "train"].set_index(["n", "compute"])
    assert np.allclose(train["mean"], expected["mean"]) and np.allclose(
        train["se"], expected["std"] / np.sqrt(3)
    )
    truth = pd.read_csv(Path(config["results_root"]) / "truth/shared/bp16/on_train/truth.csv")
    at_best = [train.loc[(row.n_star, c), "mean"]
               for row in truth.itertuples() for c in train.loc[row.n_star].index
               if abs(np.log10(c / row.compute)) < 0.05]  # fmt: skip
    assert np.allclose(truth["reward"], at_best)
    assert "### shared bp16 train" in (Path(config["results_root"]) / "truth/truth_vs_fit.md").read_text()


def means(rows: list[tuple[int, float, float, float]]) -> pd.DataFrame:
    """A study's mean table from (n, compute, mean, se) rows, of 4 seeds each."""
    table = pd.DataFrame(rows, columns=["n", "compute", "mean", "se"])
    return table.assign(sd=table["se"] * 2)


def test_ties_within_the_tolerance_or_the_noise_and_material_moves_only() -> None:
    table = true_optimum(
        means([
            (2, 1e3, 0.500, 0.0005), (8, 1e3, 0.490, 0.0005),  # 2 ahead by 0.01: no tie
            (2, 1e4, 0.600, 0.0040), (8, 1e4, 0.608, 0.0040),  # 0.008 apart but within 2 SE (0.011): a tie
            (2, 1e5, 0.700, 0.0005), (8, 1e5, 0.720, 0.0005), (64, 1e5, 0.690, 0.0005),  # 8 beats 2: a move
            (8, 1e6, 0.800, 0.0005), (64, 1e6, 0.804, 0.0005),  # within the tolerance: 8 may still be n*
            (64, 1.02e6, 0.9, 0.0005),  # n = 64 a step later, same point: the nearer one stands
            (128, 3e6, 0.95, 0.0005),  # only n = 128 measured here: no evidence about the held n = 8
            (8, 1e7, 0.85, 0.0005), (64, 1e7, 0.80, 0.0005), (128, 1e7, 0.96, 0.0005),
        ]),
        tolerance=0.005,
    )  # fmt: skip
    assert list(table["n_star"]) == [2, 8, 8, 64, 128, 128]
    assert list(table["tie"]) == [False, True, False, True, False, False]
    assert table["ties"][1] == [2, 8] and table["ties"][3] == [8, 64]
    assert list(table["move"]) == ["", "", "[2] -> [8]", "", "", "[8] -> [128]"]
    assert [list(h) for h in table["held"]] == [[2], [2], [8], [8], [8], [128]]
    assert table["candidates"][3] == [8, 64]  # n = 2 was not measured there: no candidate
    assert table["margin"][2] == pytest.approx(0.02)
    assert table["move_size"][2] == pytest.approx(0.02) and table["move_size"][5] == pytest.approx(0.11)
    assert table["move_sd"][2] == pytest.approx(np.hypot(0.001, 0.001))


def test_truth_command_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tiny_preset(tmp_path)
    preset = tmp_path / "preset.yaml"
    preset.write_text(yaml.safe_dump(config, sort_keys=False))
    refused = {
        "--levels: ['nowhere'] are not levels of the preset; known: ['tabular', 'shared']": [
            "--truth",
            "2",
            "--levels",
            "nowhere",
        ],
        "--levels ['tabular']: only --truth trains a subset of levels": ["--levels", "tabular"],
        "--truth: 1 seeds; a standard error needs at least 2": ["--truth", "1"],
    }
    for message, flags in refused.items():
        assert main(["simulate", str(preset), *flags]) != 0
        assert message in capsys.readouterr().err
    assert main(["simulate", str(preset), "--truth", "2", "--levels", "tabular"]) == 0
    printed = capsys.readouterr().out
    assert "### tabular bp16 validation" in printed and "fit: not fitted" in printed
    # a fit afterwards refreshes the comparison with its verdict and leaders
    assert main(["simulate", str(preset), "--workers", "1"]) == 0
    assert "fit: not fitted" not in (tmp_path / "results_simulated/truth/truth_vs_fit.md").read_text()
