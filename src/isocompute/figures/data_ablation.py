"""The data ablations' figures (paper Figs. 14, 15, 20, 21), drawn from fits JSON only.

Each reuses the panels of the scaling study's figures (`isocompute.figures.scaling.frontier_panel`,
`optimum_panel`), so a frontier and an n*(C) look the same wherever they are drawn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from isocompute.figures.scaling import _save, frontier_panel, log_compute_axis, optimum_panel
from isocompute.fits.data_ablation import TRAIN_METRICS, nstar_by_size
from isocompute.study.specs import FigureStyle


def _grid(style: FigureStyle, rows: int, columns: int) -> np.ndarray:
    sns.set_theme(context=style.context, style="whitegrid")
    fig, axes = plt.subplots(rows, columns, figsize=(style.width * 0.75 * columns, style.height * rows),
                             squeeze=False, constrained_layout=True)  # fmt: skip
    return fig, axes


def _legend(ax: plt.Axes) -> None:
    ax.legend(fontsize="xx-small", loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)


def plot_extremely_hard(study: Mapping[str, Any], base: Mapping[str, float], k: int, title: str, style: FigureStyle,
                        paths: Sequence[str]) -> None:  # fmt: skip
    """Fig. 20: best@k (coverage) and worst@k (sharpening) frontiers on the extremely hard set, with their
    n*(C), side by side."""
    fig, axes = _grid(style, 2, 2)
    for column, metric in enumerate((f"best@{k}", f"worst@{k}")):
        fit = study["fits"][metric]["compute_rollouts"]
        frontier_panel(axes[0, column], fit, float(base[metric]), style)
        axes[0, column].set_title(metric, fontsize="small")
        _legend(axes[0, column])
        optimum_panel(axes[1, column], fit, "n")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_mixtures(sets: Sequence[tuple[str, Mapping[str, Any], float]], metric: str, title: str, style: FigureStyle,
                  paths: Sequence[str]) -> None:  # fmt: skip
    """Fig. 15: per set (each mixture and the pure sets beside them), the frontier of `metric` and n*(C); Fig. 21
    draws the same panels for a set on its own validation set and on an out-of-domain table."""
    fig, axes = _grid(style, 2, len(sets))
    for column, (name, study, base) in enumerate(sets):
        fit = study["fits"][metric]["compute_rollouts"]
        frontier_panel(axes[0, column], fit, base, style)
        axes[0, column].set_title(name, fontsize="small")
        _legend(axes[0, column])
        optimum_panel(axes[1, column], fit, "n")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_train_vs_val(
    sizes: Sequence[int],
    validation: Sequence[Mapping[str, Any]],
    training: Sequence[Mapping[str, Any]],
    bases: Sequence[float],
    metric: str,
    title: str,
    style: FigureStyle,
    paths: Sequence[str],
) -> None:
    """Fig. 14: per training-set size, the frontiers of validation `metric`, the training reward (smoothed
    over the stated window of compute) and the training pass rate, and their n*(C) together; last, n* at
    the largest shared compute against the set size."""
    fig, axes = _grid(style, len(sizes) + 1, 4)
    markers = {"validation": "o", **dict(zip(TRAIN_METRICS, ("s", "^")))}
    for row, (size, val, train, base) in enumerate(zip(sizes, validation, training, bases)):
        fits = {"validation": val["fits"][metric]["compute_rollouts"], **train["fits"]}
        for column, (name, fit) in enumerate(fits.items()):
            ax = axes[row, column]
            frontier_panel(ax, fit, base if name == "validation" else None, style, "" if name != "validation" else "validation")
            if name == "train_reward":
                ax.set_ylabel(f"training reward, mean over C/{train['window']:g} .. C")
            elif name == "train_pass_rate":
                ax.set_ylabel("training-sample pass rate")
            ax.set_title(f"{size} training problems: {name.replace('_', ' ')}", fontsize="small")
            _legend(ax)
        ax = axes[row, 3]
        for name, fit in fits.items():
            points = pd.DataFrame(fit["optimum_points"])
            if len(points):
                ax.plot(points["compute"], points["n"], marker=markers[name], ls="-", lw=0.8, label=name.replace("_", " "))
        log_compute_axis(ax)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("sampling compute C (rollouts)")
        ax.set_ylabel("compute-optimal n*")
        ax.set_title(f"{size} training problems: n*(C)", fontsize="small")
        _legend(ax)
    table = nstar_by_size(sizes, validation, training, metric)
    last = axes[-1, 0]
    for name, group in table.groupby("metric", sort=False):
        last.plot(group["size"], group["n_star"], marker="o", label=name.replace("_", " "))
    last.set_xscale("log", base=2)
    last.set_yscale("log", base=2)
    last.set_xlabel("training problems")
    last.set_ylabel(f"n* at C = {table['compute'].iloc[0]:.3g}")
    last.set_title("n* against prompt-set size", fontsize="small")
    _legend(last)
    for ax in axes[-1, 1:]:
        ax.set_axis_off()
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def drawers(inputs: Mapping[str, Sequence[str]], labels: Sequence[str], sizes: Sequence[int], metric: str, k: int,
            style: FigureStyle, paths: Sequence[str]) -> dict[str, Callable[[], None]]:  # fmt: skip
    """Each data-ablation figure, by name, as a call drawing it from the files in `inputs` (`fits`, `base` and
    for Fig. 14 `train_fits`, one per set drawn, labelled `labels`; `sizes`: their training-set sizes);
    nothing is read until one is called. The title names the figure, its sets and the study drawn."""

    def read() -> tuple[list[dict[str, Any]], list[pd.Series], str]:
        fits = [json.loads(Path(path).read_text()) for path in inputs["fits"]]
        bases = [pd.read_parquet(path).iloc[0] for path in inputs["base"]]
        return fits, bases, f"{', '.join(labels)} ({fits[0]['study']['name']})"

    def extremely_hard() -> None:
        fits, bases, title = read()
        plot_extremely_hard(fits[0], bases[0], k, f"fig20_extremely_hard: {title}", style, paths)

    def mixtures(figure: str) -> Callable[[], None]:
        def draw() -> None:
            fits, bases, title = read()
            sets = [(label, fit, float(base[metric])) for label, fit, base in zip(labels, fits, bases)]
            plot_mixtures(sets, metric, f"{figure}: {title}", style, paths)

        return draw

    def train_vs_val() -> None:
        fits, bases, title = read()
        training = [json.loads(Path(path).read_text()) for path in inputs["train_fits"]]
        plot_train_vs_val(sizes, fits, training, [float(b[metric]) for b in bases], metric,
                          f"fig14_train_vs_val: {title}", style, paths)  # fmt: skip

    return {
        "fig14_train_vs_val": train_vs_val,
        "fig15_mixtures": mixtures("fig15_mixtures"),
        "fig20_extremely_hard": extremely_hard,
        "fig21_out_of_domain": mixtures("fig21_out_of_domain"),
    }


def render(figure: str, inputs: Mapping[str, Sequence[str]], labels: Sequence[str], sizes: Sequence[int], metric: str,
           k: int, style: FigureStyle, paths: Sequence[str]) -> None:  # fmt: skip
    """Draw the data-ablation `figure` (Fig. 14, 15, 20 or 21) from the files in `inputs`."""
    known = drawers(inputs, labels, sizes, metric, k, style, paths)
    if figure not in known:
        raise ValueError(f"unknown data-ablation figure {figure!r}")
    known[figure]()
