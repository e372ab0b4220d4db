"""The study's figures, each reproducing one of the paper's, drawn from evaluation tables and fits only.

Figures never train or fit: restyling one reruns only its rule. `render` maps a figure's name to its
drawing function and the files it reads, which is how one Snakemake rule serves every figure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from isocompute.files import read_tables  # noqa: E402
from isocompute.figures.registry import FIGURES, fit_in  # noqa: E402
from isocompute.fits.forms import FitFailure, optimum_fit_from_json, reward_fit_from_json  # noqa: E402
from isocompute.sampling.metrics import metric_names  # noqa: E402
from isocompute.study.specs import FigureStyle  # noqa: E402

AXIS_LABELS = {
    "compute_rollouts": "sampling compute C (rollouts)",
    "compute_tokens": "sampling compute C (tokens)",
    "step": "optimizer steps M",
    "n": "n*",
    "b_problem": "B_problem*",
}


# At most this many labelled ticks on a log compute axis.
MAX_COMPUTE_TICKS = 6


class ReadableLogTicks(mticker.Locator):
    """Where a log compute axis gets labelled ticks: the decades in view when there are two or more, else
    1, 2 and 5 times them, else every multiple, else evenly spaced round numbers; thinned to
    `MAX_COMPUTE_TICKS`.

    Matplotlib's default labels minor ticks as well when an axis spans about a decade or less (as a CPU
    preset's compute does), and those labels run into each other ("2x10^3 3x10^4x10^3").
    """

    def __call__(self) -> list[float]:
        low, high = self.axis.get_view_interval()
        return self.tick_values(low, high)

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        low, high = sorted((float(vmin), float(vmax)))
        if not high > 0:
            return []
        low = low if low > 0 else high / 10
        decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        ticks: list[float] = []
        for multiples in ((1,), (1, 2, 5), range(1, 10)):
            candidates = [m * 10.0**d for d in decades for m in multiples]
            ticks = [t for t in candidates if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
            if len(ticks) >= 2:
                break
        else:
            rounded = mticker.MaxNLocator(nbins=3).tick_values(low, high)
            ticks = [float(t) for t in rounded if low <= t <= high]
        return ticks[:: math.ceil(len(ticks) / MAX_COMPUTE_TICKS)] if ticks else ticks


def compute_tick_label(value: float, _position: int | None = None) -> str:
    """A compute tick as 10^k or m x 10^k, in mathtext set in the axis font as matplotlib's own labels are."""
    if value <= 0:
        return ""
    exponent = math.floor(math.log10(value) + 1e-9)
    multiple = value / 10.0**exponent
    power = f"10^{{{exponent}}}" if round(multiple, 6) == 1 else f"{multiple:.3g}\\times10^{{{exponent}}}"
    return f"$\\mathdefault{{{power}}}$"


def log_compute_axis(ax: plt.Axes) -> None:
    """Put `ax`'s x axis (compute) on a log scale with few enough labelled ticks to read
    (`ReadableLogTicks`); minor ticks stay, unlabelled. Every figure module draws its compute axes
    through this."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(ReadableLogTicks())
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(compute_tick_label))
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())


def _key_label(key: Mapping[str, int]) -> str:
    return ", ".join(f"{'B_problem' if k == 'b_problem' else k} = {v}" for k, v in key.items())


def _key_tuple(key: Mapping[str, int], by: Sequence[str]) -> tuple[int, ...]:
    return tuple(int(key[column]) for column in by)


def _figure(style: FigureStyle, panels: int = 1) -> tuple[plt.Figure, list[plt.Axes]]:
    sns.set_theme(context=style.context, style="whitegrid")
    fig, axes = plt.subplots(1, panels, figsize=(style.width * (1 if panels == 1 else 0.75 * panels), style.height))
    return fig, list(np.atleast_1d(axes))


def _save(fig: plt.Figure, paths: Sequence[str], dpi: int) -> None:
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def _segments(table: pd.DataFrame, columns: Sequence[str]) -> Any:
    """Runs of consecutive rows with the same values in `columns`."""
    segment_id = (table[list(columns)] != table[list(columns)].shift()).any(axis=1).cumsum()
    return table.groupby(segment_id)


def plot_frontier(fit: Mapping[str, Any], base_reward: float | None, title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Figs. 5 and 10: measured points and the fitted sigmoid per curve over its measured range, the
    frontier coloured by its curve; anything beyond a curve's measured range is dashed."""
    fig, (ax,) = _figure(style)
    frontier_panel(ax, fit, base_reward, style)
    ax.set_title(title)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _save(fig, paths, style.dpi)


def plot_sweep_frontier(fit: Mapping[str, Any], summary: Mapping[str, Any], base_reward: float | None, title: str,
                        style: FigureStyle, paths: Sequence[str]) -> None:  # fmt: skip
    """An adaptive sweep's frontier (the study's fit of the data it kept, as in Fig. 5) with each arm's
    stop marked where it stopped: the compute it reached, at its last measured reward."""
    fig, (ax,) = _figure(style)
    frontier_panel(ax, fit, base_reward, style)
    measured = pd.DataFrame(fit["measured"])
    keys = sorted(_key_tuple(c["key"], fit["by"]) for c in fit["curves"])
    colours = dict(zip(keys, sns.color_palette(style.palette, len(keys))))
    for arm in summary["arms"]:
        if "stopped" not in arm or (arm["n"],) not in colours:
            continue
        points = measured[measured["n"] == arm["n"]].sort_values(fit["compute"])
        last = points.iloc[-1]
        ax.scatter([last[fit["compute"]]], [last[fit["metric"]]], marker="X", s=120, color=colours[(arm["n"],)],
                   edgecolor="black", zorder=5)  # fmt: skip
    ax.scatter([], [], marker="X", s=80, color="grey", edgecolor="black", label="arm stopped by the sweep")
    share = summary["share_of_full_grid"]
    ax.set_title(f"{title}\nadaptive sweep: {share:.0%} of the full grid's rollouts")
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _save(fig, paths, style.dpi)


def frontier_panel(ax: plt.Axes, fit: Mapping[str, Any], base_reward: float | None, style: FigureStyle,
                   what: str = "validation") -> None:  # fmt: skip
    """One fit's measured points, per-curve sigmoids and frontier on `ax` (the body of Figs. 5 and 10)."""
    metric, compute, by = fit["metric"], fit["compute"], fit["by"]
    measured = pd.DataFrame(fit["measured"])
    keys = sorted(_key_tuple(c["key"], by) for c in fit["curves"])
    colours = dict(zip(keys, sns.color_palette(style.palette, len(keys))))
    span = (measured[compute].min(), measured[compute].max()) if len(measured) else (1.0, 1.0)
    for curve in fit["curves"]:
        key = _key_tuple(curve["key"], by)
        points = measured.loc[(measured[by] == pd.Series(curve["key"])).all(axis=1)]
        ax.scatter(points[compute], points[metric], color=colours[key], s=20, alpha=0.8)
        model = reward_fit_from_json(curve)
        if isinstance(model, FitFailure):
            ax.plot(points[compute], points[metric], color=colours[key], lw=0.8, ls=":",
                    label=f"{_key_label(curve['key'])} (no fit: {model.reason})")  # fmt: skip
            continue
        low, high = curve["range"]
        inside = np.geomspace(low, high, 100)
        flags = " (A not identified)" if any(f.startswith("A not") for f in model.flags) else ""
        ax.plot(inside, model(inside), color=colours[key], lw=1.3, alpha=0.7, label=_key_label(curve["key"]) + flags)
        if fit.get("extrapolate"):
            for part in (np.geomspace(span[0], low, 30), np.geomspace(high, span[1], 30)):
                ax.plot(part, model(part), color=colours[key], lw=1.0, alpha=0.5, ls="--")
    envelope = pd.DataFrame(fit["frontier"])
    if len(envelope):
        if "reward_low" in envelope:
            ax.fill_between(envelope["compute"], envelope["reward_low"], envelope["reward_high"], color="grey", alpha=0.2,
                            label="frontier 95 % band (bootstrap)")  # fmt: skip
        for _, segment in _segments(envelope, [*by, "extrapolated"]):
            key = tuple(int(v) for v in segment[by].iloc[0])
            dashed = bool(segment["extrapolated"].iloc[0])
            ax.plot(segment["compute"], segment["reward"], color=colours[key], lw=4, alpha=0.9,
                    ls="--" if dashed else "-", solid_capstyle="round")  # fmt: skip
            if len(by) > 1:
                middle = segment.iloc[len(segment) // 2]
                ax.annotate(f"({key[0]}, {key[1]})", (middle["compute"], middle["reward"]), textcoords="offset points",
                            xytext=(0, 8), ha="center", fontsize="x-small")  # fmt: skip
        ax.plot([], [], color="grey", lw=4, label="frontier inside measured ranges (coloured by its curve)")
        _leader_marks(ax, fit, by[-1])
        if envelope["extrapolated"].any():
            ax.plot([], [], color="grey", lw=4, ls="--", label="frontier extrapolated beyond a curve's range")
    if base_reward is not None:
        ax.axhline(base_reward, color="black", ls="--", lw=1, label=f"base model ({base_reward:.3f})")
    log_compute_axis(ax)
    ax.set_xlabel(AXIS_LABELS[compute])
    ax.set_ylabel(f"{what} {metric}")


def _leader_marks(ax: plt.Axes, fit: Mapping[str, Any], column: str) -> None:
    """On the frontier, at each compute point where x* is read: a filled dot where one value leads, a hollow
    one where several lead (labelled with them), a cross where the point is no evidence, a triangle where a
    run measured elsewhere only (it ended below, or began above) may lead: a censored candidate."""
    rows = fit["optimum_points"]
    if not rows or "leaders" not in rows[0]:
        return
    drawn = set()
    labelled = len(rows) <= 40  # a dense table (one evaluation per step) would bury the frontier in labels
    for row in rows:
        lead = _column_of(row, "leaders", column) or [row[column]]
        status = _column_of(row, "status", column)
        if status == "censored":
            kind, style = "no evidence: a run that ended (or began) elsewhere may lead", {"marker": "^", "color": "grey"}
        elif status != "material":
            kind, style = "no evidence (every value leads, or one curve measured)", {"marker": "x", "color": "black"}
        elif len(lead) > 1:
            kind, style = "several values lead" + (" (labelled)" if labelled else ""), {"facecolors": "none", "edgecolors": "black"}
            if labelled:
                ax.annotate("|".join(map(str, lead)), (row["compute"], row["reward"]), textcoords="offset points",
                            xytext=(0, -10), ha="center", fontsize=5)  # fmt: skip
        else:
            kind, style = "one value leads", {"color": "black"}
        ax.scatter([row["compute"]], [row["reward"]], s=12, zorder=5, label=None if kind in drawn else kind, **style)
        drawn.add(kind)


def law_label(entry: Mapping[str, Any], column: str) -> str:
    """The law of x* as printed on the paper's figures, with the interval of its midpoint, or why there is none."""
    model = optimum_fit_from_json(entry)
    if isinstance(model, FitFailure):
        return f"no law of {AXIS_LABELS[column]}: {model.reason}"
    if entry.get("identified") not in (None, "identified"):
        return f"partial law of {AXIS_LABELS[column]}: {entry['reason']}"
    interval = entry.get("intervals", {}).get("log10_c0")
    extra = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
    return (f"log2 {AXIS_LABELS[column]} = {model.L:.2f} / (1 + exp(-{model.k:.2f} (log10 C - "
            f"{model.log10_c0:.2f}{extra}))) + {model.b:.2f}")  # fmt: skip


def optimum_panel(ax: plt.Axes, fit: Mapping[str, Any], column: str) -> None:
    """One optimum (n* or B_problem*) at the measured compute points, log-log, with its law where reported.

    Each point draws its leaders (`isocompute.fits.leaders`): a vertical bar from the smallest to the largest
    value within a material margin of the best, a dot at each. Material points (some measured value is
    behind) are the law's data and are solid; a point where every measured value leads, or where a single
    curve was measured, is no evidence and is drawn hollow and grey, beside the frontier's argmax there.
    """
    points = pd.DataFrame(fit["optimum_points"])
    values = sorted({int(c["key"][column]) for c in fit["curves"]})
    entry = fit["optimum"][column]
    if len(points):
        leaders = [_column_of(row, "leaders", column) or [int(row[column])] for row in fit["optimum_points"]]
        status = [_column_of(row, "status", column) or "material" for row in fit["optimum_points"]]
        material = np.array([s == "material" for s in status])
        for compute, lead, is_material in zip(points["compute"], leaders, material):
            colour = "tab:blue" if is_material else "grey"
            if len(lead) > 1:
                ax.vlines(compute, min(lead), max(lead), color=colour, lw=1.0, alpha=0.6)
            ax.scatter([compute] * len(lead), lead, s=14, facecolors=colour if is_material else "none", edgecolors=colour)
        ax.scatter([], [], s=14, color="tab:blue", label=f"leaders of {AXIS_LABELS[column]} (within a material margin of the best)")
        if (~material).any():
            ax.scatter(points.loc[~material, "compute"], points.loc[~material, column], marker="x", color="grey", s=16,
                       label="no evidence: every value leads, or one curve measured (argmax shown)")  # fmt: skip
        model = optimum_fit_from_json(entry)
        if not isinstance(model, FitFailure):
            grid = np.geomspace(points["compute"].min(), points["compute"].max(), 200)
            ax.plot(grid, model(grid), color="tab:red", lw=1.8, label=law_label(entry, column))
        else:
            ax.plot([], [], " ", label=law_label(entry, column))
        log_compute_axis(ax)
    ax.set_yscale("log", base=2)
    if values:
        ax.set_yticks(values, [str(v) for v in values])
        ax.set_ylim(min(values) / 1.4, max(values) * 1.4)
    ax.set_xlabel(AXIS_LABELS[fit["compute"]])
    ax.set_ylabel(f"compute-optimal {AXIS_LABELS[column]}")
    if entry.get("ok") and entry.get("direction") == "falling" and column == "n":
        ax.set_title("n* falls with compute", fontsize="small", color="tab:red")
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def _column_of(row: Mapping[str, Any], field: str, column: str) -> Any:
    """A per-column field of an optimum point (fits JSON written before a field existed lack it)."""
    value = row.get(field)
    return value.get(column) if isinstance(value, Mapping) else None


def plot_optimum(fits: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Figs. 6, 8, 11 and 23: the optimum along the frontier, one panel per (fit, column)."""
    panels = [(fit, column) for fit in fits for column in columns]
    fig, axes = _figure(style, len(panels))
    for ax, (fit, column) in zip(axes, panels):
        optimum_panel(ax, fit, column)
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_extrapolation(fit: Mapping[str, Any], title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Does the law predict? The law fitted without the top compute, against the optimum and the frontier
    reward the full data give there; with no check possible, the reason is the figure."""
    check = fit.get("holdout")
    column = fit["by"][-1]
    fig, (left, right) = _figure(style, 2)
    if not check or not check.get("checkable"):
        reason = check["reason"] if check else "no hold-out check configured (fits.holdout_decades = 0)"
        for ax in (left, right):
            ax.text(0.5, 0.5, reason, transform=ax.transAxes, ha="center", va="center", wrap=True, fontsize="small")
            ax.set_axis_off()
        fig.suptitle(title)
        _save(fig, paths, style.dpi)
        return
    points = pd.DataFrame(fit["optimum_points"])
    held = pd.DataFrame(check["points"])
    for ax in (left, right):
        ax.axvspan(check["cutoff"], check["checked_up_to"], color="grey", alpha=0.15, label="held out")
        log_compute_axis(ax)
        ax.set_xlabel(AXIS_LABELS[fit["compute"]])
    left.scatter(points["compute"], points[column], color="tab:blue", s=18, label=f"{AXIS_LABELS[column]}, all data")
    law = optimum_fit_from_json(check["laws"][column])
    if isinstance(law, FitFailure):
        left.plot([], [], " ", label=f"not checkable: {law.reason}")
    else:
        grid = np.geomspace(points["compute"].min(), check["checked_up_to"], 200)
        left.plot(grid, law(grid), color="tab:red", lw=1.6, label="law fitted below the cutoff")
        share = check["optimum"][column]["within_factor_2"]
        left.set_title(f"within a factor 2 at {share:.0%} of held-out points", fontsize="small")
    left.set_yscale("log", base=2)
    values = sorted({int(c["key"][column]) for c in fit["curves"]})
    left.set_yticks(values, [str(v) for v in values])
    left.set_ylabel(f"compute-optimal {AXIS_LABELS[column]}")
    right.plot(held["compute"], held["reward_full"], "o-", color="tab:blue", label="frontier, all data")
    right.plot(held["compute"], held["reward_predicted"], "s--", color="tab:red", label="predicted from below the cutoff")
    if check.get("reward_error"):
        right.set_title(f"mean |error| {check['reward_error']['mean_abs']:.3f}", fontsize="small")
    right.set_ylabel(f"validation {fit['metric']}")
    for ax in (left, right):
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_optimum_by_metric(studies: Sequence[Mapping[str, Any]], k: int, title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Fig. 7: n* at the largest compute, per metric (avg, best, worst@k) and fixed B_problem."""
    rows = []
    for study in studies:
        for metric in metric_names(k):
            fit = study["fits"][metric]["compute_rollouts"]
            at_max = fit["optimum_at_max_compute"]
            rows.append({"b_problem": study["study"]["fixed"]["b_problem"], "metric": metric,
                         "n_star": at_max["n"] if at_max else np.nan})  # fmt: skip
    table = pd.DataFrame(rows)
    fig, (ax,) = _figure(style)
    sns.barplot(table, x="b_problem", y="n_star", hue="metric", palette=style.palette, ax=ax)
    if table["n_star"].notna().any():
        ax.set_yscale("log", base=2)
    else:
        ax.text(0.5, 0.5, "no frontier could be fitted", transform=ax.transAxes, ha="center")
    ax.set_xlabel("B_problem")
    ax.set_ylabel("n* at the largest compute")
    ax.set_title(title)
    _save(fig, paths, style.dpi)


def plot_sensitivity(evals: pd.DataFrame, metric: str, title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Fig. 9: reward at the final compute against B_problem at fixed n, and against n at fixed B_problem."""
    final = evals.loc[evals.groupby("run")["compute_rollouts"].transform("max") == evals["compute_rollouts"]]
    final = final.groupby(["b_problem", "n"], as_index=False)[metric].mean()
    fig, (left, right) = _figure(style, 2)
    for ax, x, hue in ((left, "b_problem", "n"), (right, "n", "b_problem")):
        shared = final.groupby(hue).filter(lambda group: len(group) > 1)
        if len(shared):
            sns.lineplot(shared, x=x, y=metric, hue=hue, marker="o", palette=style.palette, ax=ax)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("B_problem" if x == "b_problem" else "n")
        ax.set_ylabel(f"validation {metric} at the final compute")
        ax.set_title(f"fixed {'n' if hue == 'n' else 'B_problem'}")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def plot_train_pass_rates(rates: Sequence[pd.DataFrame], title: str, style: FigureStyle, paths: Sequence[str]) -> None:
    """Fig. 12: the training set's pass-rate distribution over training, one row per n."""
    columns = 3
    sns.set_theme(context=style.context, style="whitegrid")
    fig, axes = plt.subplots(len(rates), columns, figsize=(style.width * 1.2, style.height * 0.6 * len(rates)),
                             squeeze=False, constrained_layout=True)  # fmt: skip
    for row, table in zip(axes, rates):
        solved = table[table["pass_rate"] > 0]
        k = int(round((solved["n_correct"] / solved["pass_rate"]).max())) if len(solved) else 1
        bins = (np.arange(k + 2) - 0.5) / k  # one bin per possible pass rate j / k
        steps = sorted(table["step"].unique())
        chosen = [steps[0], steps[len(steps) // 2], steps[-1]]
        for ax, step in zip(row, chosen):
            at = table[table["step"] == step]
            ax.hist(at["pass_rate"], bins=bins, color="tab:blue", alpha=0.8)
            ax.set_title(f"n = {at['n'].iloc[0]}, C = {at['compute_rollouts'].iloc[0]:.3g}", fontsize="small")
            ax.set_xlabel("training pass rate")
        row[0].set_ylabel("problems")
    fig.suptitle(title)
    _save(fig, paths, style.dpi)


def _read_json(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def drawers(
    inputs: Mapping[str, Sequence[str]], title: str, metric: str, k: int, style: FigureStyle, paths: Sequence[str],
    *, compute: str | None = None,
) -> dict[str, Callable[[], None]]:  # fmt: skip
    """Each figure this module draws, by name, as a call drawing it from the files in `inputs` (keys as the
    figure registry, `isocompute.figures.registry`, names them), in `compute` (default: the study's
    headline measure); nothing is read until one is called."""

    def study_fit(measure: str | None = None) -> Mapping[str, Any]:
        """The study's fit of `metric`, in `measure`, else `compute`, else its headline compute measure."""
        return fit_in(_read_json(inputs["fits"][0]), metric, measure or compute, inputs["fits"][0])

    def frontier() -> None:
        fit = study_fit()
        plot_frontier(fit, _base(inputs, metric, fit), title, style, paths)

    both_optima = lambda: plot_optimum([study_fit()], ["n", "b_problem"], title, style, paths)  # noqa: E731
    return {
        "fig05_frontier": frontier,
        "fig06_nstar": lambda: plot_optimum([study_fit()], ["n"], title, style, paths),
        "fig07_nstar_by_metric": lambda: plot_optimum_by_metric([_read_json(p) for p in inputs["fits"]], k, title, style, paths),
        "fig08_fixed_batch_optimum": both_optima,
        "fig09_sensitivity": lambda: plot_sensitivity(read_tables(inputs["evals"]), metric, title, style, paths),
        "fig10_joint_frontier": frontier,
        "fig11_joint_optimum": both_optima,
        "fig12_train_pass_rates": lambda: plot_train_pass_rates([pd.read_parquet(p) for p in inputs["pass_rates"]], title, style, paths),
        "fig23_token_compute": lambda: plot_optimum(
            [study_fit(c) for c in FIGURES["fig23_token_compute"].computes], ["n"], title, style, paths
        ),
        "fig_extrapolation": lambda: plot_extrapolation(study_fit(), title, style, paths),
    }


def render(figure: str, inputs: Mapping[str, Sequence[str]], title: str, metric: str, k: int,
           style: FigureStyle, paths: Sequence[str], *, compute: str | None = None) -> None:  # fmt: skip
    """Draw `figure` from the files in `inputs` (keys as the figure rule names them), in `compute` (default:
    the study's headline measure)."""
    known = drawers(inputs, title, metric, k, style, paths, compute=compute)
    if figure not in known:
        raise ValueError(f"unknown figure {figure!r}; known: {sorted(known)}")
    known[figure]()


def _base(inputs: Mapping[str, Sequence[str]], metric: str, fit: Mapping[str, Any]) -> float | None:
    """The base model's `metric`: its evaluation where the figure is given one (the pipeline's rules), else
    the value the fit anchored its curves at (`isocompute fit --base-reward`), else none: a fits.json drawn
    alone carries no other."""
    if inputs.get("base"):
        return float(pd.read_parquet(inputs["base"][0])[metric].iloc[0])
    return fit.get("base_reward")
