"""Figures of the interference probe and of the paper's training diagnostics, drawn from their tables only."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from isocompute.figures.scaling import AXIS_LABELS, _figure, _key_label, _save, log_compute_axis  # noqa: E402
from isocompute.mechanism.diagnostics import BASE_RUN  # noqa: E402
from isocompute.study.specs import FigureStyle  # noqa: E402


def plot_probe(result: Mapping[str, Any], pairs: pd.DataFrame, title: str, style: FigureStyle,
               paths: Sequence[str]) -> None:  # fmt: skip
    """The probe: the distribution of the Adam-preconditioned cosines within and across sets (left), and
    the change of mean log p(answer) on each set after one Adam step along each set's GRPO gradient (right)."""
    fig, (left, right) = _figure(style, 2)
    summaries = result["cosines"]["adam"]
    bins = np.linspace(-1, 1, 81)
    blocks = list(pairs.groupby("block", sort=False))
    for (block, group), colour in zip(blocks, sns.color_palette(style.palette, len(blocks))):
        summary = summaries[block]
        left.hist(group["cosine_adam"].dropna(), bins=bins, density=True, histtype="step", lw=1.5, color=colour,
                  label=f"{block}: mean {summary['mean']:.3f}, {summary['share_below_-0.1']:.0%} below -0.1, "
                        f"{summary['share_above_0.1']:.0%} above +0.1")  # fmt: skip
    left.axvline(-0.1, color="black", ls="--", lw=0.8)
    left.set_xlabel("cosine of two problems' gradients (Adam metric)")
    left.set_ylabel("density of problem pairs")
    left.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    steps = pd.DataFrame(result["one_step"])
    names = list(result["sets"])
    matrix = steps.pivot(index="along", columns="on", values="change_mean_log_p").loc[names, names]
    sns.heatmap(matrix, annot=True, fmt=".3g", center=0.0, cmap="RdBu", cbar=False, ax=right)
    right.set_xlabel("change of mean log p(answer) on")
    right.set_ylabel("one Adam step along the GRPO gradient of")
    right.set_title(f"lr {steps['lr'].iloc[0]:.3g}", fontsize="small")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_training_diagnostics(table: pd.DataFrame, nstar: pd.DataFrame, by: Sequence[str], train_k: int, title: str,
                              style: FigureStyle, paths: Sequence[str]) -> None:  # fmt: skip
    """Per curve of the study: the share of training problems with pass@train_k = 0 (Fig. 12's mass at
    zero) and the share of zero-variance groups against compute, the base model's expectation dashed;
    and n* along the frontier for each metric (Fig. 7 over compute)."""
    fig, axes = _figure(style, 3)
    runs = table[table["run"] != BASE_RUN]
    base = table[table["run"] == BASE_RUN]
    keys = sorted(runs[list(by)].drop_duplicates().itertuples(index=False, name=None))
    colours = dict(zip(keys, sns.color_palette(style.palette, len(keys))))
    panels = (("share_unsolved", f"share of training problems with pass@{train_k} = 0"),
              ("zero_std_share", "share of zero-variance groups (window mean)"))  # fmt: skip
    for ax, (column, label) in zip(axes, panels):
        for key in keys:
            mine = runs[(runs[list(by)] == pd.Series(dict(zip(by, key)))).all(axis=1)]
            for _, seed in mine.groupby("seed"):
                ax.plot(seed["compute_rollouts"], seed[column], "o-", ms=3, color=colours[key],
                        label=_key_label(dict(zip(by, key))))  # fmt: skip
                if column == "share_unsolved":  # one binomial standard error over the sampled problems
                    spread = seed["share_unsolved_se"]
                    ax.fill_between(seed["compute_rollouts"], seed[column] - spread, seed[column] + spread,
                                    color=colours[key], alpha=0.12, lw=0)  # fmt: skip
            reference = base[(base[list(by)] == pd.Series(dict(zip(by, key)))).all(axis=1)][column].dropna()
            if len(reference):  # the left panel's is the same for every n: drawn in black
                shared = column == "share_unsolved"
                ax.axhline(reference.iloc[0], color="black" if shared else colours[key], ls="--", lw=0.8)
        ax.plot([], [], color="grey", ls="--", lw=0.8, label="base model (expected from its avg@16 counts)")
        log_compute_axis(ax)
        ax.set_xlabel(AXIS_LABELS["compute_rollouts"])
        ax.set_ylabel(label)
    handles, labels = axes[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axes[0].legend(unique.values(), unique.keys(), fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2),
                   frameon=False)  # fmt: skip
    right = axes[2]
    if len(nstar):
        metrics = list(nstar.groupby("metric", sort=False))
        looks = zip(sns.color_palette(style.palette, len(metrics)), ("-", "--", ":"), (6, 4, 2))
        for (metric, group), (colour, line, size) in zip(metrics, looks):  # coinciding lines stay visible
            right.step(group["compute"], group["n"], where="post", color=colour, ls=line, marker="o", ms=size,
                       label=metric)  # fmt: skip
        log_compute_axis(right)
        right.set_yscale("log", base=2)
        values = sorted(nstar["n"].unique())
        right.set_yticks(values, [str(v) for v in values])
        right.set_xlabel(AXIS_LABELS[nstar["compute_measure"].iloc[0]])
        right.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    else:
        right.text(0.5, 0.5, "no frontier could be fitted", transform=right.transAxes, ha="center")
    right.set_ylabel("compute-optimal n* by metric")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def drawers(inputs: Mapping[str, Sequence[str]], title: str, style: FigureStyle, paths: Sequence[str], *,
            by: Sequence[str] | None = None, train_k: int | None = None) -> dict[str, Callable[[], None]]:  # fmt: skip
    """Each figure this module draws, by name, as a call drawing it from the files in `inputs` (keys as the
    figure registry, `isocompute.figures.registry`, names them); nothing is read until one is called. The
    training diagnostics also need the study's curve keys (`by`) and the training pass@k's k (`train_k`)."""

    def diagnostics() -> None:
        if by is None or train_k is None:
            raise ValueError("the diagnostics figure needs the study's curve keys (by) and train_k")
        table, nstar = (pd.read_parquet(inputs[name][0]) for name in ("table", "nstar"))
        plot_training_diagnostics(table, nstar, by, train_k, title, style, paths)

    return {
        "diagnostics": diagnostics,
        "interference": lambda: plot_probe(
            json.loads(Path(inputs["probe"][0]).read_text()), pd.read_parquet(inputs["pairs"][0]), title, style, paths
        ),
    }


def render(figure: str, inputs: Mapping[str, Sequence[str]], title: str, style: FigureStyle, paths: Sequence[str], *,
           by: Sequence[str] | None = None, train_k: int | None = None) -> None:  # fmt: skip
    """Draw `figure` from the files in `inputs` (keys as its rule names them)."""
    known = drawers(inputs, title, style, paths, by=by, train_k=train_k)
    if figure not in known:
        raise ValueError(f"unknown mechanism figure {figure!r}; known: {sorted(known)}")
    known[figure]()
