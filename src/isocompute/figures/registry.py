"""The figure registry: every figure the workflow draws, its one definition.

A `Figure` says which instances it has (`kind`), what it shows (`summary` for the results index, `caption`
for the Snakemake report), which artifacts it reads (`inputs`, names the figure rules' input functions turn
into paths: `INPUTS`) and which function draws it (`draw`). The rules (`rules/figures.smk`,
`rules/data_ablations.smk`, `rules/targets.smk` and their input functions), the report's caption
(`workflow/report/figure.rst`, written from here: `python -m isocompute.figures.registry`) and the results
index (`isocompute.pipeline.artifacts`) all read this list.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isocompute.errors import IsoComputeError
from isocompute.study import recipe_ablations
from isocompute.study.specs import FigureStyle
from isocompute.study.studies import NAME_FORMS

# What a figure can read, by the name its rule's input carries (the keys of `snakemake.input`).
INPUTS = {
    "fits": "fits.json of the study (per problem set: of each fixed-B_problem study; data figures: of each set drawn)",
    "base": "the base model's evaluation on the validation set drawn",
    "evals": "evals.parquet of each run drawn",
    "logs": "train_log.parquet of each run drawn",
    "pass_rates": "train_pass_rates.parquet of the study's smallest and largest n",
    "train_fits": "train_fits.json of each set drawn (the training metrics' fits)",
    "table": "training.parquet of the study's diagnostics (per run and checkpoint: the shares drawn)",
    "nstar": "nstar_by_metric.parquet of the study's diagnostics (n* along the frontier per metric)",
    "probe": "probe.json of the interference probe (its cosine summaries and one-step changes)",
    "pairs": "pairs.parquet of the interference probe (every probed pair's gradient cosines)",
}
# The kinds of instance a figure has, besides the study kinds (`isocompute.study.studies.NAME_FORMS`) and the
# recipe ablations' kinds (`isocompute.study.recipe_ablations.KINDS`): one of each.
SET, STUDY, ABLATION, DATA = "set", "study", "ablation", "data"
# Figures with a rule of their own: a study's training diagnostics (one per study) and the interference probe's
# figure (one per probe, `results/interference/<sets>/`).
DIAGNOSTICS, PROBE = "diagnostics", "probe"
_OWN_RULES = {DIAGNOSTICS: "plot_diagnostics", PROBE: "plot_interference", DATA: "plot_data_figure"}
# The report's caption of each figure: its own file for the figures with a rule of their own and no {figure}.
_CAPTION_FILES = {DIAGNOSTICS: "diagnostics.rst", PROBE: "interference.rst"}


@dataclass(frozen=True)
class Figure:
    """One figure: what it is drawn for, what it shows, what it reads and what draws it."""

    name: str
    # "set": one per problem set; "study": one per study of any kind, or a study kind: one per such study;
    # "ablation": one per recipe ablation, or an ablation kind: one per such ablation; "data": one per
    # data-ablation instance (`isocompute.fits.data_ablation.data_figure_instances`); "diagnostics": one per
    # study, "probe": one per interference probe, each drawn by a rule of its own.
    kind: str
    summary: str
    inputs: tuple[str, ...]
    # The drawing function, "module.function": called with the figure's name first.
    draw: str
    caption: str
    # Drawn as well for each study on every other validation set its runs are scored on
    # (`extra_evaluation.sets`: results/figures/<set>/<study>/on_<other set>/).
    on_other_sets: bool = False
    # The compute measures it draws side by side (none: the study's headline measure, or the one asked for).
    computes: tuple[str, ...] = ()

    @property
    def rule(self) -> str:
        """The rule that draws the figure's instances."""
        if self.kind in _OWN_RULES:
            return _OWN_RULES[self.kind]
        if self.kind == ABLATION or self.kind in recipe_ablations.KINDS:
            return "plot_recipe_ablation_figure"
        return "plot_set_figure" if self.kind == SET else "plot_study_figure"

    @property
    def results_glob(self) -> str:
        """Where its files lie under results/, as a glob."""
        if self.kind == DATA:
            return f"figures/data/{self.name}_*"
        if self.kind == PROBE:
            return f"figures/{self.name}/*"
        return f"figures/*/{'' if self.kind == SET else '*/'}{self.name}.*"

    @property
    def caption_file(self) -> str:
        """The report's caption template of its rule, under workflow/report/."""
        return _CAPTION_FILES.get(self.kind, "figure.rst")

    @property
    def results_glob_on_other_sets(self) -> str | None:
        """Where its instances on other validation sets lie under results/, as a glob (None: not drawn there)."""
        return f"figures/*/*/on_*/{self.name}.*" if self.on_other_sets else None

    def drawing(self) -> Callable[..., Any]:
        """The function `draw` names."""
        module, _, function = self.draw.rpartition(".")
        return getattr(importlib.import_module(module), function)


_FIGURES = [
    Figure(
        name="fig05_frontier",
        kind="fixed_b_problem",
        summary="paper Fig. 5: reward vs compute per n, frontier coloured by n*",
        inputs=("fits", "base"),
        draw="isocompute.figures.scaling.render",
        caption=(
            "Validation reward against sampling compute C for each n at a fixed B_problem (paper Figure 5): dots "
            "are checkpoints, thin lines per-n monotonic sigmoid fits, the thick line their upper envelope (the "
            "compute-optimal frontier) coloured by the n attaining it, the grey band its bootstrap 95 % interval, "
            "the dashed line the base model. Black marks at the compute points where n* is read: filled where one n "
            "leads, hollow (labelled) where several n are within a material margin (fits.tolerance, or what the "
            "data resolve) of the best, a cross where every n measured leads or a single n was measured (no "
            "evidence of n*)."
        ),
        on_other_sets=True,
    ),
    Figure(
        name="fig06_nstar",
        kind="fixed_b_problem",
        summary="paper Fig. 6: compute-optimal n* vs compute with its sigmoid fit",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "Compute-optimal n* along the frontier against C, log-log (paper Figure 6): at each compute point the "
            "n that lead (within a material margin of the best; a bar spans them), solid where some n is behind "
            "(the law's data), grey where every n leads or one n was measured (no evidence); with the fit log2 n* "
            "= L / (1 + exp(-k (log10 C - log10 C0))) + b through the leaders."
        ),
        on_other_sets=True,
    ),
    Figure(
        name="fig07_nstar_by_metric",
        kind="set",
        summary="paper Fig. 7: n* at the largest compute for avg@4, best@4, worst@4",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "n* at the largest compute for avg@k, best@k (coverage) and worst@k (sharpening), per fixed B_problem "
            "(paper Figure 7)."
        ),
    ),
    Figure(
        name="fig08_fixed_batch_optimum",
        kind="fixed_batch",
        summary="paper Fig. 8: n*(M) and B_problem*(M) at fixed B",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "At a fixed total batch B = B_problem * n: the compute-optimal n*(M) (a sigmoid) and B_problem*(M) "
            "(an inverse sigmoid) against optimizer steps M (paper Figure 8); each point draws its leaders (a bar "
            "over the values within a material margin of the best), grey where it is no evidence."
        ),
    ),
    Figure(
        name="fig09_sensitivity",
        kind="set",
        summary="paper Fig. 9: final reward vs B_problem at fixed n and vs n at fixed B_problem",
        inputs=("evals",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "Reward at the final compute against B_problem at fixed n (left) and against n at fixed B_problem "
            "(right) (paper Figure 9)."
        ),
    ),
    Figure(
        name="fig10_joint_frontier",
        kind="joint",
        summary="paper Fig. 10: global frontier annotated with (B_problem, n)",
        inputs=("fits", "base"),
        draw="isocompute.figures.scaling.render",
        caption=(
            "All three knobs free: per-(B_problem, n) curves and the global frontier annotated with the "
            "(B_problem, n) attaining it (paper Figure 10)."
        ),
    ),
    Figure(
        name="fig11_joint_optimum",
        kind="joint",
        summary="paper Fig. 11: n*(C) and B_problem*(C) on the global frontier",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "All three knobs free: n*(C) and B_problem*(C) along the global frontier with their sigmoid fits "
            "(paper Figure 11)."
        ),
    ),
    Figure(
        name="fig12_train_pass_rates",
        kind="fixed_b_problem",
        summary="paper Fig. 12: training pass-rate distribution over training",
        inputs=("fits", "pass_rates"),
        draw="isocompute.figures.scaling.render",
        caption=(
            "Training-set pass-rate distribution at the first, middle and last checkpoint, for the smallest and "
            "largest n of the study (paper Figure 12)."
        ),
    ),
    Figure(
        name="fig23_token_compute",
        kind="fixed_b_problem",
        summary="paper Fig. 23: n*(C) with compute in rollouts and in tokens",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "n*(C) with compute measured in rollouts (left) and in sampled tokens (right) (paper Figure 23)."
        ),
        computes=("compute_rollouts", "compute_tokens"),
    ),
    Figure(
        name="fig_extrapolation",
        kind="study",
        summary="does the law predict? refitted without the top compute, against what it left out",
        inputs=("fits",),
        draw="isocompute.figures.scaling.render",
        caption=(
            "Does the law predict? The top fits.holdout_decades of measured compute (grey band) are held out and "
            "every curve and the law are refitted on the rest. Left: the compute-optimal value at each measured "
            "compute point from all the data (dots) against the law fitted below the cutoff (red line); the title "
            "gives the share of held-out points where the law is within a factor 2. Right: the frontier reward "
            "there from all the data (blue) against the one predicted from below the cutoff (red, dashed), with "
            "their mean absolute error in the title. Where the truncated data identify no law, or no point lies "
            "on one side of the cutoff, the figure states why instead."
        ),
    ),
    Figure(
        name="fig03_training_health",
        kind="ablation",
        summary="paper Fig. 3: training reward, entropy, KL, length, zero-std share per run",
        inputs=("logs", "evals", "base"),
        draw="isocompute.figures.recipe_ablation.render",
        caption=(
            "Training health of an ablation study's runs (paper Figure 3's panels): training reward, entropy, KL "
            "to the base model, response length and the share of groups whose rewards are all equal, per "
            "optimizer step (thin) and smoothed (thick), beside validation reward at the checkpoints. A recipe "
            "without a KL term logs no KL and has no line there."
        ),
    ),
    Figure(
        name="fig04_learning_rate",
        kind="learning_rate",
        summary="paper Fig. 4: the lr_base anchor sweep, reward per learning-rate rule",
        inputs=("logs", "evals", "base"),
        draw="isocompute.figures.recipe_ablation.render",
        caption=(
            "Learning rate (paper Figure 4): validation reward of the lr_base anchor sweep at B = B_ref (left), "
            "and of the constant, linear and square-root rules at a larger B against steps and against compute."
        ),
    ),
    Figure(
        name="fig22_decoupled_baseline",
        kind="decoupled_baseline",
        summary="paper Fig. 22: n, a larger n and the decoupled baseline",
        inputs=("logs", "evals", "base"),
        draw="isocompute.figures.recipe_ablation.render",
        caption=(
            "Decoupled baseline (paper Figure 22): validation reward against compute (every sampled rollout "
            "counted) and against steps for n, a larger n, and n of n_baseline rollouts in the loss with the "
            "group's baseline over all n_baseline."
        ),
    ),
    Figure(
        name="diagnostics",
        kind=DIAGNOSTICS,
        summary="a study's training diagnostics: pass@train_k = 0 share, zero-variance share, n* by metric",
        inputs=("table", "nstar"),
        draw="isocompute.figures.mechanism.render",
        caption=(
            "The paper's diagnostics of interference for one study, per curve (n, or B_problem and n). Left: the "
            "share of the sampled training problems with no correct sample out of evaluation.train_k at each "
            "checkpoint (the mass at pass rate 0 of paper Figure 12, as a curve over compute). Middle: the share of "
            "groups whose n rewards are all equal (TRL's frac_reward_zero_std: groups with no gradient), averaged "
            "over the steps with compute in (C / window, C]. Dashed: the base model's expectation of each share, "
            "estimated from the bucketing's avg@16 counts (none where n exceeds 16; a bucket selected on those "
            "counts leans toward its range, so the reference is low on Easy, high on Hard). Right: the "
            "compute-optimal n* along the frontier for avg@k, best@k and worst@k (paper Figure 7 over compute)."
        ),
    ),
    Figure(
        name="interference",
        kind=PROBE,
        summary="the interference probe: cosine distribution and one-step changes between sets",
        inputs=("probe", "pairs"),
        draw="isocompute.figures.mechanism.render",
        caption=(
            "Interference probe of the base model. Left: the distribution of the cosines between two training "
            "problems' gradients of log p(answer + eos | prompt), in the metric of Adam's step (diagonal 1 / "
            "(sqrt(v) + eps), v from 20 GRPO minibatch gradients at the base model), within each set and across "
            "sets; the legend gives each block's mean and share below -0.1. Right: the change of the mean log "
            "p(answer + eos) on each set (columns) after one Adam step at the study's learning rate along the GRPO "
            "gradient of each set (rows; 8 sampled completions per problem, TRL's group advantages and loss). "
            "Negative cells off the diagonal are interference between the sets."
        ),
    ),
    Figure(
        name="fig14_train_vs_val",
        kind="data",
        summary="paper Fig. 14: training reward and training pass rate beside validation, n* vs set size",
        inputs=("fits", "base", "train_fits"),
        draw="isocompute.figures.data_ablation.render",
        caption=(
            "Training against validation over prompt-set size (paper Figure 14), one row per training-set size of "
            "a sweep: the frontiers of validation reward, of the training reward (TRL's, averaged over the stated "
            "window of compute up to C) and of the pass rate of sampled training problems, then the n*(C) of all "
            "three on one panel. The last row plots n* at the largest compute all sizes share against the number "
            "of training problems, for each of the three metrics: where the training metrics' n* parts from the "
            "validation one, training reward is not a stand-in for held-out reward at that size."
        ),
    ),
    Figure(
        name="fig15_mixtures",
        kind="data",
        summary="paper Fig. 15: frontier and n*(C) of each Easy/Hard mixture beside the pure sets",
        inputs=("fits", "base"),
        draw="isocompute.figures.data_ablation.render",
        caption=(
            "Easy/Hard mixtures (paper Figure 15): one column per set, each mixture (also on the other evaluation "
            "sets configured for it) beside the pure sets it mixes; top, the frontier of validation reward "
            "against compute as in Figure 5; bottom, n*(C) as in Figure 6. Read across a row to see whether "
            "mixing moves n* from where the pure sets put it."
        ),
    ),
    Figure(
        name="fig20_extremely_hard",
        kind="data",
        summary="paper Fig. 20: best@k and worst@k frontiers and n*(C) on the extremely hard set",
        inputs=("fits", "base"),
        draw="isocompute.figures.data_ablation.render",
        caption=(
            "The extremely hard set (paper Figure 20: problems the base model never solves in pass@k sampling): "
            "left, best@k (coverage: at least one of k samples correct); right, worst@k (sharpening: all k "
            "correct); top, their frontiers against compute; bottom, their n*(C). Coverage can rise while "
            "sharpening stays at zero."
        ),
    ),
    Figure(
        name="fig21_out_of_domain",
        kind="data",
        summary="paper Fig. 21: frontier and n*(C) on an out-of-domain table beside each set's own validation",
        inputs=("fits", "base"),
        draw="isocompute.figures.data_ablation.render",
        caption=(
            "Out-of-domain evaluation (paper Figure 21): for each set evaluated on the out-of-domain table, two "
            "columns, the runs scored on the set's own validation problems and the same runs (the same "
            "checkpoints) scored on the out-of-domain table; top, the frontier against compute; bottom, n*(C). "
            "Whether n* on the other table follows the one on the set's own validation says whether the "
            "allocation transfers."
        ),
    ),
]
FIGURES: dict[str, Figure] = {figure.name: figure for figure in _FIGURES}
# The paper's figures drawn per study, problem set or recipe ablation (`{figure}` in the rules), by kind: all
# but those with a rule of their own.
STUDY_FIGURES = {name: figure.kind for name, figure in FIGURES.items() if figure.kind not in _OWN_RULES}
# The figures also drawn on the other validation sets a study is scored on (`{figure}` of plot_study_figure_on).
ON_OTHER_SETS = tuple(name for name, figure in FIGURES.items() if figure.on_other_sets)
# The data ablations' figures (`{data_figure}`: each has instances named `<figure>_<instance>`).
DATA_FIGURES = {name: figure.summary for name, figure in FIGURES.items() if figure.kind == DATA}

# The study kind whose figures a fits.json of `isocompute fit` gets (its study's kind is "cli"), by curve key.
_KIND_OF_KEY = {("n",): "fixed_b_problem", ("b_problem", "n"): "joint"}
# The files a study's fits.json stands in for when it is drawn alone: the base model's evaluation, whose
# value is the one the fit anchored its curves at (`scaling.drawers`).
_FROM_FITS = {"fits", "base"}


class FitsFileError(IsoComputeError, ValueError):
    """A fits.json without what a figure draws; the message names the file and the key."""


def fit_in(study_file: Mapping[str, Any], metric: str, compute: str | None, path: str) -> Mapping[str, Any]:
    """The fit of `metric` in `compute` (default: the file's headline measure) of a study's fits.json,
    `fits[metric][compute]`; where the file lacks it, an error naming the missing key and the keys the file
    has, so a figure asked of the wrong file or metric says what to ask for instead of a bare KeyError."""
    fits = study_file.get("fits")
    if not isinstance(fits, Mapping):
        raise FitsFileError(f"{path}: no key 'fits': not a study's fits JSON (docs/reference/fits.md)")
    if metric not in fits:
        raise FitsFileError(
            f"{path}: no fit of metric {metric!r} (key fits[{metric!r}]); it has {sorted(fits)}"
        )
    compute = compute or headline(study_file, "compute", path)
    if compute not in fits[metric]:
        raise FitsFileError(
            f"{path}: no fit of {metric!r} in {compute!r} (key fits[{metric!r}][{compute!r}]); "
            f"it has {sorted(fits[metric])}"
        )
    return fits[metric][compute]


def headline(study_file: Mapping[str, Any], field: str, path: str) -> str:
    """The file's headline `field` (metric or compute): what it is drawn in unless another is asked for."""
    value = (study_file.get("headline") or {}).get(field)
    if value is None:
        raise FitsFileError(f"{path}: no key headline[{field!r}]: name the {field} to draw")
    return str(value)


def fits_figures(study_file: Mapping[str, Any], metric: str, path: str) -> list[str]:
    """The figures a study's fits.json alone draws: those the pipeline draws for its study's kind (a fits.json
    of `isocompute fit`, with curves by n, gets a fixed-B_problem study's, by (B_problem, n) the joint
    study's) that read nothing but the fits and the base model's value, and whose compute measures the file
    holds for `metric` (Fig. 23 draws rollouts and tokens side by side)."""
    study = study_file.get("study") or {}
    kind = study.get("kind")
    if kind not in NAME_FORMS:
        by = tuple(study.get("by") or ())
        if by not in _KIND_OF_KEY:
            raise FitsFileError(
                f"{path}: study['by'] = {list(by)}: the study figures draw curves by n or by (b_problem, n)"
            )
        kind = _KIND_OF_KEY[by]
    held = set(study_file["fits"][metric])
    return [
        figure.name
        for figure in FIGURES.values()
        if figure.kind in (STUDY, kind) and set(figure.inputs) <= _FROM_FITS and set(figure.computes) <= held
    ]


def draw_fits_file(
    path: str,
    out_dir: str | Path,
    style: FigureStyle,
    metric: str | None = None,
    compute: str | None = None,
    formats: Sequence[str] = ("png",),
) -> list[Path]:
    """Every figure `fits_figures` gives for the study's fits.json at `path` (the pipeline's or `isocompute
    fit`'s), in `metric` and `compute` (default: the file's headline), drawn into `out_dir` as
    `<figure>.<format>` by the function its entry names, called as the pipeline's rule plot_study_figure
    calls it: the same figures from any fits.json. Returns the files written."""
    try:
        study_file = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise FitsFileError(f"{path}: not a readable fits JSON ({error})") from None
    metric = metric or headline(study_file, "metric", path)
    compute = fit_in(study_file, metric, compute, path)["compute"]
    study = study_file.get("study") or {}
    where = " / ".join(str(part) for part in (study.get("problem_set"), study.get("name")) if part)
    written = []
    for name in fits_figures(study_file, metric, path):
        paths = [Path(out_dir) / f"{name}.{extension}" for extension in formats]
        # k is read by the set figure of n* by metric (Fig. 7) alone, which is drawn from a set's studies.
        title, files = f"{where}: {name}", [str(p) for p in paths]
        FIGURES[name].drawing()(name, {"fits": [str(path)]}, title, metric, 0, style, files, compute=compute)
        written += paths
    return written


# The first line of every caption file: where it comes from.
_WRITTEN_HERE = (
    "{# Written from isocompute.figures.registry (python -m isocompute.figures.registry): edit the caption "
    "there. #}\n"
)
_CAPTION_HEAD = (
    _WRITTEN_HERE
    + "{# plot_data_figure names its figure `data_figure` (the instance is a second wildcard); the other "
    "figure rules `figure` #}\n"
    "{% set figure = snakemake.wildcards.figure or snakemake.wildcards.data_figure %}\n"
)


def report_captions() -> dict[str, str]:
    """The report's caption templates (under workflow/report/), by file name: `figure.rst` chooses each
    shared-rule figure's caption by its wildcard; a figure with a rule of its own has a file of its own."""
    shared = [figure for figure in FIGURES.values() if figure.caption_file == "figure.rst"]
    branches = [
        f'{{% {"if" if i == 0 else "elif"} figure == "{figure.name}" %}}{figure.caption}'
        for i, figure in enumerate(shared)
    ]
    captions = {"figure.rst": _CAPTION_HEAD + "\n".join(branches) + "\n{% endif %}\n"}
    for figure in FIGURES.values():
        if figure.caption_file != "figure.rst":
            captions[figure.caption_file] = _WRITTEN_HERE + figure.caption + "\n"
    return captions


if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "workflow/report")
    for name, text in report_captions().items():
        (folder / name).write_text(text)
