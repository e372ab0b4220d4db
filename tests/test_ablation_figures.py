"""The ablation figures (paper Figs. 3, 4, 22) build from training logs and evaluations alone."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.ablation_figures import render, run_labels
from isocompute.specs import FigureStyle

STYLE = FigureStyle(palette="viridis", dpi=50, width=5.0, height=3.5, context="paper")


def run(name: str, n: int = 8, recipe: str = "kl_entropy", kl_coef: float = 0.001, rule: str = "sqrt",
        base: float = 1e-4, n_baseline: int | None = None) -> dict:  # fmt: skip
    return {"run": name, "b_problem": 16, "n": n, "n_baseline": n_baseline, "seed": 0, "recipe": recipe,
            "kl_coef": kl_coef, "entropy_coef": kl_coef, "zero_variance_filter": None, "lr_rule": rule,
            "lr_base": base, "lr_batch_ref": 128, "lr": base * (16 * n / 128) ** 0.5}  # fmt: skip


def write_run(tmp_path: Path, description: dict, steps: int = 40) -> tuple[str, str]:
    """A run's training log and evaluations where the pipeline puts them (the run's folder name is its name)."""
    rng = np.random.default_rng(len(description["run"]))
    folder = tmp_path / "train" / "easy" / description["run"]
    folder.mkdir(parents=True)
    step = np.arange(1, steps + 1)
    log = pd.DataFrame({"step": step, "reward": rng.uniform(0.3, 0.6, steps), "entropy": rng.uniform(0.5, 1, steps),
                        "kl": rng.uniform(0, 0.01, steps) if description["kl_coef"] else None,
                        "response_length": rng.uniform(4, 6, steps), "frac_reward_zero_std": rng.uniform(0, 0.5, steps)})  # fmt: skip
    log.to_parquet(folder / "train_log.parquet")
    batch = 16 * (description["n_baseline"] or description["n"])
    evals_folder = tmp_path / "evaluation" / "easy" / description["run"]
    evals_folder.mkdir(parents=True)
    checkpoints = np.array([5, 10, 20, 40])
    pd.DataFrame({"run": description["run"], "step": checkpoints, "compute_rollouts": checkpoints * batch,
                  "avg@4": rng.uniform(0.4, 0.6, 4)}).to_parquet(evals_folder / "evals.parquet")  # fmt: skip
    return str(folder / "train_log.parquet"), str(evals_folder / "evals.parquet")


def draw(tmp_path: Path, figure: str, runs: list[dict]) -> Path:
    files = [write_run(tmp_path, r) for r in runs]
    pd.DataFrame([{"avg@4": 0.45}]).to_parquet(tmp_path / "base.parquet")
    inputs = {"logs": [log for log, _ in files], "evals": [evals for _, evals in files], "base": [str(tmp_path / "base.parquet")]}
    out = tmp_path / f"{figure}.png"
    render(figure, inputs, runs, figure, "avg@4", STYLE, [str(out), str(tmp_path / f"{figure}.pdf")])
    return out


def test_training_health_draws_every_run_and_a_run_without_kl(tmp_path: Path) -> None:
    runs = [run("bp16_n8_seed0"), run("bp16_n8_seed0_recipe-unregularized", recipe="unregularized", kl_coef=0.0)]
    assert draw(tmp_path, "fig03_training_health", runs).stat().st_size > 5000


def test_learning_rate_figure_separates_the_anchor_sweep_from_the_rules(tmp_path: Path) -> None:
    runs = [run("bp16_n8_seed0"), run("bp16_n8_seed0_lr-sqrt-1e-3-ref128", base=1e-3),
            run("bp16_n32_seed0", n=32), run("bp16_n32_seed0_lr-linear-1e-4-ref128", n=32, rule="linear")]  # fmt: skip
    assert draw(tmp_path, "fig04_learning_rate", runs).stat().st_size > 5000


def test_decoupled_baseline_figure(tmp_path: Path) -> None:
    runs = [run("bp16_n4_seed0", n=4), run("bp16_n16_seed0", n=16), run("bp16_n4_seed0_baseline16", n=4, n_baseline=16)]
    assert draw(tmp_path, "fig22_decoupled_baseline", runs).stat().st_size > 5000
    with pytest.raises(ValueError, match="unknown ablation figure"):
        draw(tmp_path / "other", "fig05_frontier", runs)


def test_labels_say_what_sets_a_run_apart() -> None:
    decoupled = run_labels([run("a", n=4), run("b", n=16), run("c", n=4, n_baseline=16)])
    assert decoupled == {"a": "n = 4", "b": "n = 16", "c": "n = 4 of 16 (decoupled baseline)"}
    rules = run_labels([run("a", rule="constant"), run("b", rule="linear")])
    assert rules["b"].startswith("linear, lr_base 0.0001")
    assert run_labels([run("a", recipe="kl_entropy"), run("b", recipe="unregularized")]) == {"a": "kl_entropy", "b": "unregularized"}
