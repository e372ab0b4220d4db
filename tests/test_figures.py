"""Every figure builds from a small fixture of evaluation tables and fits, without training anything."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.figures.registry import draw_fits_file
from isocompute.figures.scaling import MAX_COMPUTE_TICKS, log_compute_axis, render
from isocompute.fits.fits_json import fit_configured_study
from isocompute.fits.forms import reward_curve
from isocompute.study.grid import GridPoint
from isocompute.study.specs import FigureStyle
from isocompute.study.studies import Study

STYLE = FigureStyle(palette="viridis", dpi=50, width=5.0, height=3.5, context="paper")
PAIRS = [(16, 2), (16, 8), (16, 32), (64, 2), (4, 32)]
STEPS = 8


def fixture_tables(tmp_path: Path) -> dict[str, Path]:
    """Per-run evals, val counts and training pass rates of a synthetic study, written like the pipeline's."""
    rng = np.random.default_rng(0)
    files: dict[str, Path] = {}
    for b_problem, n in PAIRS:
        run = f"bp{b_problem}_n{n}_seed0"
        steps = np.unique(np.geomspace(1, 4096 // (b_problem * n) * 8, STEPS).round().astype(int))
        counts, rates, rows = [], [], []
        for step in steps:
            c = step * b_problem * n
            p = reward_curve(np.log10(c), 0.4, 0.5 + 0.05 * np.log2(n), 2.0 + 0.3 * np.log2(n), 1.0)
            correct = rng.binomial(4, p, size=60)
            at = {"run": run, "problem_set": "easy", "b_problem": b_problem, "n": n, "seed": 0, "step": int(step),
                  "compute_rollouts": int(c), "compute_tokens": float(5 * c)}  # fmt: skip
            counts.append(pd.DataFrame({"id": [f"p{i}" for i in range(60)], "n_correct": correct, **at}))
            rows.append({**at, "avg@4": correct.mean() / 4, "best@4": (correct > 0).mean(), "worst@4": (correct == 4).mean()})
            solved = rng.integers(0, 9, size=30)
            rates.append(pd.DataFrame({"id": [f"t{i}" for i in range(30)], "n_correct": solved, "pass_rate": solved / 8, **at}))
        for name, table in [("evals", pd.DataFrame(rows)), ("val_counts", pd.concat(counts)), ("pass", pd.concat(rates))]:
            files[f"{run}/{name}"] = tmp_path / f"{run}_{name}.parquet"
            table.to_parquet(files[f"{run}/{name}"])
    pd.DataFrame([{"avg@4": 0.4, "best@4": 0.7, "worst@4": 0.1}]).to_parquet(tmp_path / "base.parquet")
    files["base"] = tmp_path / "base.parquet"
    return files


def study_fits(tmp_path: Path, files: dict[str, Path], study: Study) -> str:
    runs = [f"bp{p.b_problem}_n{p.n}_seed0" for p in study.runs(_points())]
    evals = pd.concat([pd.read_parquet(files[f"{r}/evals"]) for r in runs])
    counts = pd.concat([pd.read_parquet(files[f"{r}/val_counts"]) for r in runs])
    options = {"metric": "avg@4", "min_compute": 0, "anchor_r0": True, "points": "all", "record_bin": 0.01,
               "frontier_points": 20, "bootstrap": 5, "extrapolate": True, "holdout_decades": 0.5, "tolerance": 0.005}  # fmt: skip
    fits = fit_configured_study(evals, counts, {"avg@4": 0.4, "best@4": 0.7, "worst@4": 0.1}, study, options, 4,
                                {"lr_rule": "sqrt", "lr_base": 1e-4, "lr_batch_ref": 128}, seed=0)  # fmt: skip
    path = tmp_path / f"{study.name}.json"
    path.write_text(json.dumps(fits))
    return str(path)


def _points() -> list[GridPoint]:
    return [GridPoint("easy", b, n, 0) for b, n in PAIRS]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    tmp_path = tmp_path_factory.mktemp("fixture")
    files = fixture_tables(tmp_path)
    bp16 = study_fits(tmp_path, files, Study("easy", "fixed_b_problem", 16))
    batch128 = study_fits(tmp_path, files, Study("easy", "fixed_batch", 128))
    joint = study_fits(tmp_path, files, Study("easy", "joint"))
    base = [str(files["base"])]
    return {
        "fig05_frontier": {"fits": [bp16], "base": base},
        "fig06_nstar": {"fits": [bp16]},
        "fig07_nstar_by_metric": {"fits": [bp16]},
        "fig08_fixed_batch_optimum": {"fits": [batch128]},
        "fig09_sensitivity": {"evals": [str(files[f"bp{b}_n{n}_seed0/evals"]) for b, n in PAIRS]},
        "fig10_joint_frontier": {"fits": [joint], "base": base},
        "fig11_joint_optimum": {"fits": [joint]},
        "fig12_train_pass_rates": {"pass": [], "pass_rates": [str(files["bp16_n2_seed0/pass"]), str(files["bp16_n32_seed0/pass"])]},
        "fig23_token_compute": {"fits": [bp16]},
        "fig_extrapolation": {"fits": [bp16]},
    }


@pytest.mark.parametrize(
    "figure",
    [
        "fig05_frontier",
        "fig06_nstar",
        "fig07_nstar_by_metric",
        "fig08_fixed_batch_optimum",
        "fig09_sensitivity",
        "fig10_joint_frontier",
        "fig11_joint_optimum",
        "fig12_train_pass_rates",
        "fig23_token_compute",
        "fig_extrapolation",
    ],
)
def test_every_figure_renders_from_tables(tmp_path: Path, inputs: dict, figure: str) -> None:
    paths = [str(tmp_path / f"{figure}.png"), str(tmp_path / f"{figure}.pdf")]
    render(figure, inputs[figure], f"easy: {figure}", "avg@4", 4, STYLE, paths)
    assert all(Path(p).stat().st_size > 3000 for p in paths)


def test_figures_survive_failed_fits(tmp_path: Path) -> None:
    fits = {
        "study": {"fixed": {"b_problem": 8}},
        "headline": {"metric": "avg@4", "compute": "compute_rollouts"},
        "fits": {"avg@4": {"compute_rollouts": {
            "metric": "avg@4", "compute": "compute_rollouts", "by": ["n"],
            "measured": [{"n": 4, "step": 1, "compute_rollouts": 32.0, "avg@4": 0.1}],
            "curves": [{"key": {"n": 4}, "ok": False, "reason": "1 points above min_compute=0, need 3"}],
            "frontier": [], "optimum_points": [], "optimum": {"n": {"ok": False, "reason": "no curve could be fitted"}},
            "optimum_at_max_compute": None, "holdout": {"checkable": False, "reason": "not checkable on this range"},
        }}},
    }  # fmt: skip
    path = tmp_path / "fits.json"
    path.write_text(json.dumps(fits))
    for figure in ("fig05_frontier", "fig06_nstar", "fig_extrapolation"):
        render(figure, {"fits": [str(path)], "base": []} if figure == "fig06_nstar" else {"fits": [str(path)], "base": _base(tmp_path)},
               "easy", "avg@4", 4, STYLE, [str(tmp_path / f"{figure}.png")])  # fmt: skip
        assert (tmp_path / f"{figure}.png").stat().st_size > 3000


def _base(tmp_path: Path) -> list[str]:
    pd.DataFrame([{"avg@4": 0.05}]).to_parquet(tmp_path / "base.parquet")
    return [str(tmp_path / "base.parquet")]


@pytest.mark.parametrize("low, high", [(1800, 6300), (2000, 3000), (64, 65536), (100, 1e9)])
def test_log_compute_axes_label_a_few_ticks_that_do_not_run_into_each_other(low: float, high: float) -> None:
    """On a narrow panel, as in the 2 x 2 data figures: at least two labels, at most MAX_COMPUTE_TICKS, no
    two overlapping, and no label on a minor tick (matplotlib's default labels those on a short log axis)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.5, 2.0), dpi=100)
    ax.plot([low, high], [0.0, 1.0])
    log_compute_axis(ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    view = sorted(ax.get_xlim())
    shown = [tick.label1 for tick in ax.xaxis.get_major_ticks()
             if tick.label1.get_text() and view[0] <= tick.get_loc() <= view[1]]  # fmt: skip
    assert 2 <= len(shown) <= MAX_COMPUTE_TICKS, [label.get_text() for label in shown]
    boxes = sorted((label.get_window_extent(renderer) for label in shown), key=lambda box: box.x0)
    assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:])), [label.get_text() for label in shown]
    assert not any(tick.label1.get_text() for tick in ax.xaxis.get_minor_ticks())
    plt.close(fig)


@pytest.mark.parametrize(
    ("study", "figures"),
    [
        # The pipeline's fits.json of each study kind, by the figure whose fixture input holds it.
        ("fig05_frontier", ["fig05_frontier", "fig06_nstar", "fig23_token_compute", "fig_extrapolation"]),
        ("fig08_fixed_batch_optimum", ["fig08_fixed_batch_optimum", "fig_extrapolation"]),
        ("fig10_joint_frontier", ["fig10_joint_frontier", "fig11_joint_optimum", "fig_extrapolation"]),
    ],
)
def test_a_fits_file_alone_draws_its_figures(tmp_path: Path, inputs: dict, study: str, figures: list) -> None:
    """`isocompute plot` on the pipeline's fits.json of each study kind: the figures the pipeline draws for
    that kind from the fits alone (not the pass rates), by the same code, in the formats asked for."""
    written = draw_fits_file(inputs[study]["fits"][0], tmp_path, STYLE, formats=("png", "pdf"))
    assert [path.name for path in written] == [f"{name}.{ext}" for name in figures for ext in ("png", "pdf")]
    assert all(path.stat().st_size > 3000 for path in written)
