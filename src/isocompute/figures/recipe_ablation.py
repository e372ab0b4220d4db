"""Figures of the recipe ablations (paper Figs. 3, 4 and 22), drawn from the runs' training logs and
evaluations only, so restyling one never retrains anything.

Every ablation study gets its training health (Fig. 3's panels: training reward, entropy, KL, response
length and the share of zero-variance groups against steps, with the validation reward beside them); a
learning-rate study the anchor sweep and the rules (Fig. 4); a decoupled-baseline study reward against
compute (Fig. 22). A run is labelled by what varies within its study (recipe, learning rate, n, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from isocompute.figures.scaling import _save, log_compute_axis  # noqa: E402
from isocompute.study.specs import FigureStyle  # noqa: E402

# Fig. 3's panels: the training table's columns (`training.table.LOG_COLUMNS`) and what they show.
HEALTH_PANELS = {
    "reward": "training reward",
    "entropy": "entropy (nats per token)",
    "kl": "KL to the base model",
    "response_length": "response length (tokens)",
    "frac_reward_zero_std": "share of zero-variance groups",
}


def lr_label(run: Mapping[str, Any]) -> str:
    """A run's learning-rate rule, anchor and the rate it trained at."""
    return f"{run['lr_rule']}, lr_base {run['lr_base']:.3g} (lr {run['lr']:.3g})"


def run_labels(runs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """A label per run saying what sets it apart within its study (what is equal for all goes unsaid)."""

    def varies(*keys: str) -> bool:
        return len({tuple(run[key] for key in keys) for run in runs}) > 1

    labels = {}
    for run in runs:
        parts = []
        if varies("recipe"):
            parts.append(run["recipe"])
        if varies("b_problem"):
            parts.append(f"B_problem = {run['b_problem']}")
        if varies("n", "n_baseline"):
            parts.append(f"n = {run['n']} of {run['n_baseline']} (decoupled baseline)" if run["n_baseline"] else f"n = {run['n']}")
        if varies("lr_rule", "lr_base", "lr_batch_ref"):
            parts.append(lr_label(run))
        if varies("seed"):
            parts.append(f"seed {run['seed']}")
        labels[run["run"]] = ", ".join(parts) or run["run"]
    return labels


def _by_run(paths: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Each run's table, by the run folder it lies in (`<stage>/<set>/<run>/<file>`)."""
    return {Path(path).parent.name: pd.read_parquet(path) for path in paths}


def _smoothed(values: pd.Series) -> pd.Series:
    """A centred moving average over about a twentieth of the run: per-step training logs are noisy."""
    return values.rolling(max(1, len(values) // 20), center=True, min_periods=1).mean()


def _legend_below(fig: plt.Figure, ax: plt.Axes) -> None:
    """One legend for the whole figure, under it, from `ax`'s lines."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(3, max(1, len(labels))), fontsize="small",
               frameon=False)  # fmt: skip


def plot_training_health(
    runs: Sequence[Mapping[str, Any]],
    logs: Mapping[str, pd.DataFrame],
    evals: Mapping[str, pd.DataFrame],
    base: float,
    metric: str,
    title: str,
    style: FigureStyle,
    paths: Sequence[str],
) -> plt.Figure:
    """Fig. 3: per run, each training-health quantity against steps (thin: per step; thick: smoothed), and
    validation `metric` against steps. A run whose recipe has no KL term logs no KL: it has no line there,
    and the panel says so."""
    labels = run_labels(runs)
    colours = dict(zip(labels, sns.color_palette(style.palette, len(labels))))
    sns.set_theme(context=style.context, style="whitegrid")
    fig, grid = plt.subplots(2, 3, figsize=(style.width * 1.6, style.height * 1.5), constrained_layout=True)
    axes = list(grid.flat)
    for ax, (column, name) in zip(axes, HEALTH_PANELS.items()):
        missing = []
        for run, label in labels.items():
            table = logs[run]
            values = pd.to_numeric(table[column], errors="coerce")
            if values.isna().all():
                missing.append(label)
                continue
            ax.plot(table["step"], values, color=colours[run], lw=0.6, alpha=0.3)
            ax.plot(table["step"], _smoothed(values), color=colours[run], lw=1.6, label=label)
        if missing:
            reason = "no KL term" if column == "kl" else "not logged"
            ax.text(0.02, 0.98, f"{reason} (no line): " + "; ".join(missing), transform=ax.transAxes, va="top",
                    fontsize="x-small", wrap=True)  # fmt: skip
        ax.set_xlabel("optimizer steps M")
        ax.set_ylabel(name)
    validation = axes[-1]
    for run, label in labels.items():
        table = evals[run].sort_values("step")
        validation.plot(table["step"], table[metric], "o-", color=colours[run], ms=3, label=label)
    validation.axhline(base, color="black", ls="--", lw=1, label=f"base model ({base:.3f})")
    validation.set_xlabel("optimizer steps M")
    validation.set_ylabel(f"validation {metric}")
    _legend_below(fig, validation)
    fig.suptitle(title)
    _save(fig, paths, style.dpi)
    return fig


def _curves(ax: plt.Axes, chosen: Sequence[Mapping[str, Any]], evals: Mapping[str, pd.DataFrame], x: str,
            metric: str, labels: Mapping[str, str], base: float, style: FigureStyle) -> None:  # fmt: skip
    """Validation `metric` against `x` for the chosen runs, and the base model's; the reason when there are none."""
    colours = sns.color_palette(style.palette, max(1, len(chosen)))
    for colour, run in zip(colours, chosen):
        table = evals[run["run"]].sort_values("step")
        ax.plot(table[x], table[metric], "o-", color=colour, ms=3, label=labels[run["run"]])
    ax.axhline(base, color="black", ls="--", lw=1, label=f"base model ({base:.3f})")
    if not chosen:
        ax.text(0.5, 0.5, "no runs of this kind in the study", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel({"step": "optimizer steps M", "compute_rollouts": "sampling compute C (rollouts)"}[x])
    if x != "step":
        log_compute_axis(ax)
    ax.set_ylabel(f"validation {metric}")
    if chosen:
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def plot_learning_rate(runs: Sequence[Mapping[str, Any]], evals: Mapping[str, pd.DataFrame], base: float, metric: str,
                       title: str, style: FigureStyle, paths: Sequence[str]) -> plt.Figure:  # fmt: skip
    """Fig. 4: the anchor sweep (runs at B = B_ref, where every rule gives lr_base) against steps, and the
    rules at the other batches against steps and against compute."""
    anchor = [r for r in runs if r["b_problem"] * r["n"] == r["lr_batch_ref"]]
    rules = [r for r in runs if r not in anchor]
    sns.set_theme(context=style.context, style="whitegrid")
    fig, axes = plt.subplots(1, 3, figsize=(style.width * 2.0, style.height), constrained_layout=True)
    labels = {r["run"]: lr_label(r) for r in runs}
    _curves(axes[0], sorted(anchor, key=lambda r: r["lr_base"]), evals, "step", metric, labels, base, style)
    axes[0].set_title("anchor sweep: lr_base at B = B_ref", fontsize="small")
    for ax, x in zip(axes[1:], ("step", "compute_rollouts")):
        _curves(ax, rules, evals, x, metric, labels, base, style)
        ax.set_title("rules at B = " + ", ".join(sorted({str(r["b_problem"] * r["n"]) for r in rules})), fontsize="small")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)
    return fig


def plot_decoupled_baseline(runs: Sequence[Mapping[str, Any]], evals: Mapping[str, pd.DataFrame], base: float,
                            metric: str, title: str, style: FigureStyle, paths: Sequence[str]) -> plt.Figure:  # fmt: skip
    """Fig. 22: validation reward against compute (every sampled rollout counted) and against steps for
    n, a larger n, and n of n_baseline rollouts in the loss."""
    labels = run_labels(runs)
    ordered = sorted(runs, key=lambda r: (r["n_baseline"] or r["n"], r["n"]))
    sns.set_theme(context=style.context, style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(style.width * 1.5, style.height), constrained_layout=True)
    for ax, x in zip(axes, ("compute_rollouts", "step")):
        _curves(ax, ordered, evals, x, metric, labels, base, style)
    fig.suptitle(title)
    _save(fig, paths, style.dpi)
    return fig


def drawers(inputs: Mapping[str, Sequence[str]], runs: Sequence[Mapping[str, Any]], title: str, metric: str,
            style: FigureStyle, paths: Sequence[str]) -> dict[str, Callable[[], plt.Figure]]:  # fmt: skip
    """Each ablation figure this module draws, by name, as a call drawing it from the files in `inputs`
    (`logs`, `evals`, `base`) for its `runs`; nothing is read until one is called."""
    evals = lambda: _by_run(inputs["evals"])
    base = lambda: float(pd.read_parquet(inputs["base"][0])[metric].iloc[0])
    return {
        "fig03_training_health": lambda: plot_training_health(
            runs, _by_run(inputs["logs"]), evals(), base(), metric, title, style, paths
        ),
        "fig04_learning_rate": lambda: plot_learning_rate(runs, evals(), base(), metric, title, style, paths),
        "fig22_decoupled_baseline": lambda: plot_decoupled_baseline(runs, evals(), base(), metric, title, style, paths),
    }


def render(figure: str, inputs: Mapping[str, Sequence[str]], runs: Sequence[Mapping[str, Any]], title: str,
           metric: str, style: FigureStyle, paths: Sequence[str]) -> plt.Figure:  # fmt: skip
    """Draw an ablation `figure` from the files in `inputs` (`logs`, `evals`, `base`) for its `runs`; the
    figure is returned (closed) so its drawn data can be read back."""
    known = drawers(inputs, runs, title, metric, style, paths)
    if figure not in known:
        raise ValueError(f"unknown ablation figure {figure!r}")
    return known[figure]()
