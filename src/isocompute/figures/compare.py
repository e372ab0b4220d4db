"""`isocompute compare`: several studies (one per base model, say) on shared axes, from their fits alone.

The paper's Figure 13 compares where n* saturates for different base models. Each model's study is its
own results tree (`results_dir` in the config), so the comparison reads only `fits/<set>/<study>/fits.json`
of each tree: for every (problem set, study) that at least one tree has, one figure of the frontiers and
one of n* at the measured compute points with each tree's law where it identified one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from isocompute.errors import IsoComputeError
from isocompute.figures.scaling import AXIS_LABELS, law_label, log_compute_axis  # noqa: E402
from isocompute.fits.forms import FitFailure, optimum_fit_from_json  # noqa: E402
from isocompute.study.specs import FigureStyle  # noqa: E402

FIGURE = "fig13_models"
# The embedded default's `figures` block: the CLI draws like the pipeline.
DEFAULT_STYLE = FigureStyle(palette="viridis", dpi=150, width=7.0, height=4.5, context="notebook")


class CompareError(IsoComputeError, ValueError):
    """Results trees that hold nothing to compare; the message names them."""


def tree_label(results_dir: Path) -> str:
    """A results tree's name on the figures: its folder, or the folder above a plain `results/`."""
    results_dir = results_dir.resolve()
    return results_dir.parent.name if results_dir.name == "results" else results_dir.name


def read_fits(results_dirs: Sequence[str | Path]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """{(problem set, study): {tree label: fits JSON}} over every tree's `fits/*/*/fits.json`."""
    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for results_dir in map(Path, results_dirs):
        files = sorted(results_dir.glob("fits/*/*/fits.json"))
        if not files:
            raise CompareError(f"{results_dir}: no fits/<set>/<study>/fits.json (has the study been fitted?)")
        label = tree_label(results_dir)
        for path in files:
            found.setdefault((path.parent.parent.name, path.parent.name), {})[label] = json.loads(path.read_text())
    return found


def _headline(fits_file: dict[str, Any], metric: str | None) -> dict[str, Any]:
    metric = metric or fits_file["headline"]["metric"]
    return fits_file["fits"][metric][fits_file["headline"]["compute"]]


def plot_comparison(
    trees: dict[str, dict[str, Any]], title: str, style: FigureStyle, out_dir: Path, stem: str, metric: str | None = None
) -> list[Path]:
    """The frontiers and the optimum of every tree of one (set, study), each tree in its own colour."""
    sns.set_theme(context=style.context, style="whitegrid")
    colours = dict(zip(trees, sns.color_palette(style.palette, len(trees))))
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.width * 1.6, style.height))
    column = "n"
    values: set[int] = set()
    for label, fits_file in trees.items():
        fit = _headline(fits_file, metric)
        frontier = pd.DataFrame(fit["frontier"])
        if len(frontier):
            left.plot(frontier["compute"], frontier["reward"], color=colours[label], lw=2.5, label=label)
        if fit.get("base_reward") is not None:
            left.axhline(fit["base_reward"], color=colours[label], ls=":", lw=1)
        column = fit["by"][-1]
        values |= {int(curve["key"][column]) for curve in fit["curves"]}
        points = pd.DataFrame(fit["optimum_points"])
        if len(points):
            right.scatter(points["compute"], points[column], color=colours[label], s=16)
        entry = fit["optimum"][column]
        law = optimum_fit_from_json(entry)
        if isinstance(law, FitFailure) or not len(points):
            right.plot([], [], color=colours[label], ls=":", label=f"{label}: {law_label(entry, column)}")
        else:
            grid = points["compute"].sort_values().to_numpy()
            right.plot(grid, law(grid), color=colours[label], lw=1.8, label=f"{label}: {law_label(entry, column)}")
    for ax in (left, right):
        log_compute_axis(ax)
    compute = next(iter(trees.values()))["headline"]["compute"]
    left.set_xlabel(AXIS_LABELS[compute])
    right.set_xlabel(AXIS_LABELS[compute])
    left.set_ylabel(f"validation {metric or next(iter(trees.values()))['headline']['metric']} on the frontier")
    right.set_yscale("log", base=2)
    if values:
        right.set_yticks(sorted(values), [str(v) for v in sorted(values)])
    right.set_ylabel(f"compute-optimal {AXIS_LABELS[column]}")
    left.legend(fontsize="x-small", frameon=False)
    right.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.suptitle(title)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=style.dpi, bbox_inches="tight")
    plt.close(fig)
    return paths


def compare(
    results_dirs: Sequence[str | Path], out_dir: str | Path, style: FigureStyle = DEFAULT_STYLE, metric: str | None = None
) -> list[Path]:
    """One comparison figure per (problem set, study) found in any tree; returns the files written."""
    written = []
    for (problem_set, study), trees in sorted(read_fits(results_dirs).items()):
        title = f"{problem_set} / {study}: " + " vs ".join(trees)
        written += plot_comparison(trees, title, style, Path(out_dir), f"{FIGURE}_{problem_set}_{study}", metric)
    return written
