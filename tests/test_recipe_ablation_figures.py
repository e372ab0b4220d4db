"""The ablation figures (paper Figs. 3, 4, 22) build from training logs and evaluations alone, and draw
what those hold: the lines are read back from the figures."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from isocompute.figures.recipe_ablation import HEALTH_PANELS, lr_label, render, run_labels
from isocompute.study.specs import FigureStyle

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


def draw(tmp_path: Path, figure: str, runs: list[dict]) -> tuple[Figure, Path]:
    files = [write_run(tmp_path, r) for r in runs]
    pd.DataFrame([{"avg@4": 0.45}]).to_parquet(tmp_path / "base.parquet")
    inputs = {"logs": [log for log, _ in files], "evals": [evals for _, evals in files], "base": [str(tmp_path / "base.parquet")]}
    out = tmp_path / f"{figure}.png"
    drawn = render(figure, inputs, runs, figure, "avg@4", STYLE, [str(out), str(tmp_path / f"{figure}.pdf")])
    return drawn, out


def labelled(ax: Axes) -> dict[str, Line2D]:
    """The lines of `ax` that carry a legend label, by label."""
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


def logged(tmp_path: Path, stage: str, run_name: str, file: str) -> pd.DataFrame:
    return pd.read_parquet(tmp_path / stage / "easy" / run_name / file)


def test_training_health_draws_every_run_and_a_run_without_kl(tmp_path: Path) -> None:
    runs = [run("bp16_n8_seed0"), run("bp16_n8_seed0_recipe-unregularized", recipe="unregularized", kl_coef=0.0)]
    figure, out = draw(tmp_path, "fig03_training_health", runs)
    assert out.stat().st_size > 5000
    panels = {ax.get_ylabel(): ax for ax in figure.axes}
    for column, name in HEALTH_PANELS.items():
        drawn = labelled(panels[name])
        assert set(drawn) == ({"kl_entropy"} if column == "kl" else {"kl_entropy", "unregularized"}), name
        for run_name, label in (("bp16_n8_seed0", "kl_entropy"), ("bp16_n8_seed0_recipe-unregularized", "unregularized")):
            if label in drawn:  # the thin line holds every logged step's value
                table = logged(tmp_path, "train", run_name, "train_log.parquet")
                raw = [line for line in panels[name].get_lines() if line.get_color() == drawn[label].get_color()][0]
                np.testing.assert_allclose(raw.get_ydata(), table[column])
    notes = [text.get_text() for text in panels[HEALTH_PANELS["kl"]].texts]
    assert notes == ["no KL term (no line): unregularized"]
    validation = labelled(panels["validation avg@4"])
    assert set(validation) == {"kl_entropy", "unregularized", "base model (0.450)"}
    evals = logged(tmp_path, "evaluation", "bp16_n8_seed0_recipe-unregularized", "evals.parquet")
    np.testing.assert_allclose(validation["unregularized"].get_ydata(), evals.sort_values("step")["avg@4"])


def test_learning_rate_figure_separates_the_anchor_sweep_from_the_rules(tmp_path: Path) -> None:
    runs = [run("bp16_n8_seed0"), run("bp16_n8_seed0_lr-sqrt-1e-3-ref128", base=1e-3),
            run("bp16_n32_seed0", n=32), run("bp16_n32_seed0_lr-linear-1e-4-ref128", n=32, rule="linear")]  # fmt: skip
    figure, _ = draw(tmp_path, "fig04_learning_rate", runs)
    anchor, rules_by_step, rules_by_compute = figure.axes
    base = "base model (0.450)"
    # B = 16 x 8 = 128 = B_ref: the anchor sweep, in order of lr_base; B = 512: the rules
    assert list(labelled(anchor)) == [lr_label(runs[0]), lr_label(runs[1]), base]
    for ax in (rules_by_step, rules_by_compute):
        assert list(labelled(ax)) == [lr_label(runs[2]), lr_label(runs[3]), base]
    assert anchor.get_title() == "anchor sweep: lr_base at B = B_ref"
    assert rules_by_step.get_title() == "rules at B = 512"
    evals = logged(tmp_path, "evaluation", "bp16_n32_seed0", "evals.parquet")
    np.testing.assert_array_equal(labelled(rules_by_step)[lr_label(runs[2])].get_xdata(), evals["step"])
    np.testing.assert_array_equal(labelled(rules_by_compute)[lr_label(runs[2])].get_xdata(), evals["compute_rollouts"])
    assert rules_by_compute.get_xscale() == "log"


def test_decoupled_baseline_figure_plots_each_run_against_compute_and_against_steps(tmp_path: Path) -> None:
    runs = [run("bp16_n4_seed0", n=4), run("bp16_n16_seed0", n=16), run("bp16_n4_seed0_baseline16", n=4, n_baseline=16)]
    figure, _ = draw(tmp_path, "fig22_decoupled_baseline", runs)
    by_compute, by_steps = figure.axes
    labels = ["n = 4", "n = 4 of 16 (decoupled baseline)", "n = 16"]  # by rollouts sampled per problem, then n
    assert list(labelled(by_compute)) == list(labelled(by_steps)) == [*labels, "base model (0.450)"]
    for description, label in zip([runs[0], runs[2], runs[1]], labels):
        evals = logged(tmp_path, "evaluation", description["run"], "evals.parquet")
        np.testing.assert_array_equal(labelled(by_compute)[label].get_xdata(), evals["compute_rollouts"])
        np.testing.assert_array_equal(labelled(by_steps)[label].get_xdata(), evals["step"])
        np.testing.assert_allclose(labelled(by_steps)[label].get_ydata(), evals["avg@4"])
    assert (by_compute.get_xscale(), by_steps.get_xscale()) == ("log", "linear")
    with pytest.raises(ValueError, match="unknown ablation figure"):
        draw(tmp_path / "other", "fig05_frontier", runs)


def test_labels_say_what_sets_a_run_apart() -> None:
    decoupled = run_labels([run("a", n=4), run("b", n=16), run("c", n=4, n_baseline=16)])
    assert decoupled == {"a": "n = 4", "b": "n = 16", "c": "n = 4 of 16 (decoupled baseline)"}
    rules = run_labels([run("a", rule="constant"), run("b", rule="linear")])
    assert rules["b"].startswith("linear, lr_base 0.0001")
    assert run_labels([run("a", recipe="kl_entropy"), run("b", recipe="unregularized")]) == {"a": "kl_entropy", "b": "unregularized"}
