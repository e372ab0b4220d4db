# Config validation, the study's tables (grid, sets, studies, adaptive sweep), path helpers and wildcard
# constraints.
# Each stage's input functions live in its own rules/<stage>.smk; the targets in rules/targets.smk.
import re

from isocompute.adaptive import rungs
from isocompute.figures import registry as figure_registry
from isocompute.fits import data_ablation as data_ablation_fits
from isocompute.fits import study_fit
from isocompute.pipeline import config as study_config
from isocompute.pipeline import inputs
from isocompute.study import recipe_ablations, studies, upgrades

study_config.validate_config(
    config, workflow.source_path("../workflow/schemas/config.schema.yaml")
)
GRID = study_config.check_config(config)
# Every problem set by name, resolved (a size sweep's sizes apart, a mixture's parts, default recipes).
PROBLEM_SETS = study_config.problem_sets(config)
# Validation sets beyond each set's own, and the out-of-domain problem tables among them.
EXTRA_EVALUATION = study_config.evaluation_sets(config)
OUT_OF_DOMAIN = study_config.out_of_domain_tables(config)
ROOTS = study_config.output_roots(config)


def results(path):
    """A path under the study's results root (`results_root`, default `results`)."""
    return f"{ROOTS['results']}/{path}"


def logs(path):
    return f"{ROOTS['logs']}/{path}"


def benchmarks(path):
    return f"{ROOTS['benchmarks']}/{path}"


# A problem table or base model that later jobs could not use stops the study here, before any job.
inputs.check_inputs(config)
STUDIES = study_config.studies_of(config, GRID)
ABLATIONS = {(a.problem_set, a.name): a for a in study_config.ablations_of(config)}
# The sets the grid (`grid:`) runs on: those of the per-set figures.
GRID_SETS = sorted(
    {p.problem_set for p in study_config.expand_blocks(config, config["grid"], "grid")}
)
# Every run by problem set and name: rules take one {run} wildcard and look its grid point up here.
RUNS = {(point.problem_set, point.run): point for point in GRID}
# The adaptive sweep (None: the full grid), its prior per problem set (None: none), its compute caps, and
# its studies with their runs (the arms
# by n): an adaptive run trains rung by rung (rules/adaptive.smk), every other run in one job
# (rules/train.smk).
ADAPTIVE = study_config.adaptive_settings(config, STUDIES, GRID)
ADAPTIVE_PRIOR = study_config.adaptive_prior(config)
ADAPTIVE_CAPS = (
    rungs.rung_caps(
        config["training"]["compute_min"],
        config["training"]["compute_max"],
        ADAPTIVE.rung_factor,
    )
    if ADAPTIVE
    else []
)
ADAPTIVE_STUDIES = {
    (s.problem_set, s.name): s
    for s in STUDIES
    if ADAPTIVE and s.kind == "fixed_b_problem"
}
ADAPTIVE_RUNS = {p.run for s in ADAPTIVE_STUDIES.values() for p in s.runs(GRID)}
FULL_RUNS = {p.run for p in GRID} - ADAPTIVE_RUNS

# Every figure (`isocompute.figures.registry`): its kind, inputs and caption; the paper's figures drawn per
# study, set or recipe ablation ({figure}) by kind, and the data ablations' ({data_figure}).
FIGURE_REGISTRY = figure_registry.FIGURES
FIGURES = figure_registry.STUDY_FIGURES
DATA_FIGURES = figure_registry.DATA_FIGURES
FIGURES_ON_OTHER_SETS = figure_registry.ON_OTHER_SETS
ABLATION_KINDS = recipe_ablations.KINDS


def figure_inputs(figure, paths):
    """The inputs `figure` reads, by name in its registry order: `paths` maps each name to its files."""
    return {name: paths[name]() for name in FIGURE_REGISTRY[figure].inputs}


def one_of(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(sorted(re.escape(name) for name in set(names))) or "(?!)"


# One or more problem sets joined by "+".
PROBE = f"(?:{one_of(PROBLEM_SETS)})(?:\\+(?:{one_of(PROBLEM_SETS)}))*"


wildcard_constraints:
    problem_set=one_of(PROBLEM_SETS),
    k=r"\d+",
    run=one_of(point.run for point in GRID),
    shard=r"\d+",
    rung=r"\d+",
    round=r"\d+",
    study=studies.NAME_PATTERN,
    ablation=one_of(name for _, name in ABLATIONS),
    figure="|".join(FIGURES),
    data_figure=one_of(DATA_FIGURES),
    eval_set=one_of([*PROBLEM_SETS, *OUT_OF_DOMAIN]),


def point_of(wildcards):
    """The grid point a job's wildcards name."""
    return RUNS[(wildcards.problem_set, wildcards.run)]


def run_params(wildcards):
    """What the run computes with, as plain values: its own recipe and learning rate, no other run's."""
    return study_config.run_params(config, point_of(wildcards))


def settings_of(block):
    """A config block as a job's params, less its layout (`config.params_form`: the script reads that from
    the config) and the fields an upgrade added at their neutral value: neither reruns a finished job
    (`isocompute.study.upgrades`, docs/guide/upgrading.md)."""
    return upgrades.without_added(study_config.params_form(config[block], block), block)


def study_of(wildcards):
    return studies.parse_study(wildcards.problem_set, wildcards.study)


def run_files(points, name, stage="evaluation"):
    """One file (`evals.parquet`, `val_counts.parquet`, ...; of `stage`) of each run."""
    return [results(f"{stage}/{p.problem_set}/{p.run}/{name}") for p in points]


def study_fits(study):
    return results(f"fits/{study.problem_set}/{study.name}/fits.json")


def sampler_params(*keys):
    """The model and sampler settings of the rules that sample (all of them, or those `keys`), one param
    each; `settings_of` leaves out what an upgrade added, so none reruns a finished job.
    """
    values = {
        "pretrained": config["base_model"]["pretrained"],
        "sampling": settings_of("sampling"),
        "generation": settings_of("generation"),
        "checker": config["problems"]["checker"],
        "seed": config["seed"],
    }
    return {key: values[key] for key in keys or values}
