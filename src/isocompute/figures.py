"""The study's figures: reward vs compute per n with the frontier (paper Fig. 5) and n*(C) (Fig. 6).

Figures read only the evaluation tables and the fits' JSON, so restyling a figure never retrains or
refits anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from isocompute.fitting import FitFailure, curve_points, nstar_fit_from_json, reward_fit_from_json  # noqa: E402
from isocompute.specs import FigureStyle  # noqa: E402

COMPUTE_LABELS = {"compute_rollouts": "sampling compute C (rollouts)", "compute_tokens": "sampling compute C (tokens)"}


def _n_colours(values: list[int], palette: str) -> dict[int, Any]:
    colours = sns.color_palette(palette, len(values))
    return dict(zip(sorted(values), colours))


def _save(fig: plt.Figure, paths: list[str], dpi: int) -> None:
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def plot_frontier(
    evals: pd.DataFrame,
    fits: Mapping[str, Any],
    base_reward: float | None,
    title: str,
    style: FigureStyle,
    paths: list[str],
) -> None:
    """Fig. 5: measured points and fitted sigmoid per n, the frontier drawn over them coloured by n*."""
    sns.set_theme(context=style.context, style="whitegrid")
    metric, compute = fits["metric"], fits["compute"]
    points = curve_points(evals, metric, compute)
    n_values = sorted(int(n) for n in points["n"].unique())
    colours = _n_colours(n_values, style.palette)
    fig, ax = plt.subplots(figsize=(style.width, style.height))
    grid = np.geomspace(points[compute].min(), points[compute].max(), 200)
    for n in n_values:
        group = points[points["n"] == n]
        ax.scatter(group[compute], group[metric], color=colours[n], s=22, alpha=0.8)
        fit = reward_fit_from_json(fits["curves"][str(n)])
        label = f"n = {n}" if not isinstance(fit, FitFailure) else f"n = {n} (no fit: {fit.reason})"
        if isinstance(fit, FitFailure):
            ax.plot(group[compute], group[metric], color=colours[n], lw=0.8, ls=":", label=label)
        else:
            ax.plot(grid, fit(grid), color=colours[n], lw=1.4, alpha=0.7, label=label)
    envelope = pd.DataFrame(fits["frontier"])
    if len(envelope):
        for n, segment in envelope.groupby((envelope["n_star"] != envelope["n_star"].shift()).cumsum()):
            n_star = int(segment["n_star"].iloc[0])
            ax.plot(segment["compute"], segment["reward"], color=colours.get(n_star, "black"), lw=4, alpha=0.9, solid_capstyle="round")
        ax.plot([], [], color="grey", lw=4, label="frontier (coloured by n*)")
    if base_reward is not None:
        ax.axhline(base_reward, color="black", ls="--", lw=1, label=f"base model ({base_reward:.3f})")
    ax.set_xscale("log")
    ax.set_xlabel(COMPUTE_LABELS[compute])
    ax.set_ylabel(f"validation {metric}")
    ax.set_title(title)
    ax.legend(fontsize="small", frameon=True)
    _save(fig, paths, style.dpi)


def plot_nstar(fits: Mapping[str, Any], title: str, style: FigureStyle, paths: list[str]) -> None:
    """Fig. 6: n* along the frontier against compute, log-log, with the fitted sigmoid and its parameters."""
    sns.set_theme(context=style.context, style="whitegrid")
    envelope = pd.DataFrame(fits["frontier"])
    fig, ax = plt.subplots(figsize=(style.width, style.height))
    if len(envelope):
        ax.scatter(envelope["compute"], envelope["n_star"], color="tab:blue", s=18, label="n* on the frontier")
        fit = nstar_fit_from_json(fits["nstar_fit"])
        if isinstance(fit, FitFailure):
            ax.text(0.03, 0.95, f"no sigmoid fit: {fit.reason}", transform=ax.transAxes, va="top", fontsize="small")
        else:
            grid = np.geomspace(envelope["compute"].min(), envelope["compute"].max(), 200)
            label = (
                f"log2 n* = {fit.L:.2f} / (1 + exp(-{fit.k:.2f} (log10 C - {fit.log10_c0:.2f}))) + {fit.b:.2f}"
            )
            ax.plot(grid, fit(grid), color="tab:red", lw=1.8, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log", base=2)
    ax.set_xlabel(COMPUTE_LABELS[fits["compute"]])
    ax.set_ylabel("compute-optimal n*")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="lower right")
    _save(fig, paths, style.dpi)
