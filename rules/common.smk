# Config validation, wildcard constraints and every input function of the workflow.
from isocompute import config as study
from isocompute import grid

study.validate_config(
    config, workflow.source_path("../workflow/schemas/config.schema.yaml")
)
GRID = study.check_config(config)
FIXED_B_PROBLEM = sorted({(point.problem_set, point.b_problem) for point in GRID})


wildcard_constraints:
    problem_set="|".join(config["problem_sets"]),
    b_problem=r"\d+",
    n=r"\d+",
    seed=r"\d+",
    shard=r"\d+",


def point_of(wildcards):
    """The grid point a job's wildcards name."""
    return grid.GridPoint(
        wildcards.problem_set,
        int(wildcards.b_problem),
        int(wildcards.n),
        int(wildcards.seed),
    )


def get_problem_pool():
    return "results/problems/pool.parquet"


def get_base_model_input():
    """A file dependency only when the pipeline builds the model itself."""
    return [] if config["base_model"]["pretrained"] else ["results/base_model/model"]


def base_model_path(wildcards, input):
    """The base model to load: the pipeline's own (an input) or the configured path or hub id."""
    return input.model[0] if input.model else config["base_model"]["pretrained"]


def get_difficulty_shards():
    return expand(
        "results/difficulty/shards/shard{shard}.parquet",
        shard=range(config["difficulty"]["shards"]),
    )


def run_evals(points):
    """The evaluation tables of the given runs."""
    return [
        f"results/evaluation/{p.problem_set}/bp{p.b_problem}_n{p.n}_seed{p.seed}/evals.parquet"
        for p in points
    ]


def get_fit_evals(wildcards):
    """The runs of one fixed-B_problem study, one curve per n."""
    return run_evals(
        grid.runs_of(GRID, wildcards.problem_set, int(wildcards.b_problem))
    )


def get_all_run_evals():
    return run_evals(GRID)


def figure_paths(name):
    """Every (problem set, B_problem) instance of a figure, PNG and PDF."""
    return [
        f"results/figures/{problem_set}/bp{b_problem}/{name}.{ext}"
        for problem_set, b_problem in FIXED_B_PROBLEM
        for ext in ("png", "pdf")
    ]


def get_study_outputs():
    """The study's answers: every figure and the table of all evaluations."""
    return [
        *figure_paths("fig05_frontier"),
        *figure_paths("fig06_nstar"),
        "results/evaluation/evals.csv",
    ]


def get_final_output():
    """Everything `snakemake` with no target builds: the study's answers and the results index."""
    return [*get_study_outputs(), "results/README.md"]
