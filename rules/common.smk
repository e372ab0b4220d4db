# Config validation, wildcard constraints and every input function of the workflow.
from isocompute import config as study_config
from isocompute import inputs, studies

study_config.validate_config(
    config, workflow.source_path("../workflow/schemas/config.schema.yaml")
)
GRID = study_config.check_config(config)
# A problem table or base model that later jobs could not use stops the study here, before any job.
inputs.check_inputs(config)
STUDIES = study_config.studies_of(config, GRID)
PROBLEM_SETS = sorted({point.problem_set for point in GRID})

FIGURES = {name: kind for name, (kind, _) in studies.FIGURES.items()}


localrules:
    gather_difficulty,
    build_problem_sets,
    gather_evaluations,
    fit_study,
    plot_study_figure,
    plot_set_figure,
    recommend_allocation,
    write_results_index,


wildcard_constraints:
    problem_set="|".join(config["problem_sets"]),
    b_problem=r"\d+",
    n=r"\d+",
    seed=r"\d+",
    shard=r"\d+",
    study=r"bp\d+|batch\d+|joint",
    figure="|".join(FIGURES),


def config_slice(*keys):
    """The config blocks a job reads, as a plain dict: Snakemake reruns the job when they change."""
    return {key: config[key] for key in keys}


def point_of(wildcards):
    """The grid point a job's wildcards name."""
    return study_config.GridPoint(
        wildcards.problem_set,
        int(wildcards.b_problem),
        int(wildcards.n),
        int(wildcards.seed),
    )


def study_of(wildcards):
    return studies.parse_study(wildcards.problem_set, wildcards.study)


def get_problem_pool():
    return "results/problems/pool.parquet"


def get_base_model_input():
    """A file dependency only when the pipeline builds the model itself."""
    return [] if config["base_model"]["pretrained"] else ["results/base_model/model"]


def get_difficulty_shards():
    return expand(
        "results/difficulty/shards/shard{shard}.parquet",
        shard=range(config["difficulty"]["shards"]),
    )


def run_files(points, name):
    """One evaluation file (`evals.parquet`, `val_counts.parquet`, ...) of each run."""
    return [
        f"results/evaluation/{p.problem_set}/bp{p.b_problem}_n{p.n}_seed{p.seed}/{name}"
        for p in points
    ]


def get_study_fit_inputs(wildcards):
    runs = study_of(wildcards).runs(GRID)
    return {
        "evals": run_files(runs, "evals.parquet"),
        "val_counts": run_files(runs, "val_counts.parquet"),
        "base": f"results/evaluation/{wildcards.problem_set}/base_model.parquet",
        "base_counts": f"results/evaluation/{wildcards.problem_set}/base_counts.parquet",
    }


def study_fits(study):
    return f"results/fits/{study.problem_set}/{study.name}/fits.json"


def get_study_figure_inputs(wildcards):
    """What each per-study figure reads: the study's fits, plus evaluations where it draws them."""
    study = study_of(wildcards)
    inputs = {"fits": [study_fits(study)]}
    if wildcards.figure in ("fig05_frontier", "fig10_joint_frontier"):
        inputs["base"] = [f"results/evaluation/{study.problem_set}/base_model.parquet"]
    if wildcards.figure == "fig12_train_pass_rates":
        runs = sorted(study.runs(GRID), key=lambda p: (p.seed, p.n))
        extremes = [runs[0], max(runs, key=lambda p: (p.n, -p.seed))]
        inputs["pass_rates"] = run_files(extremes, "train_pass_rates.parquet")
    return inputs


def get_set_figure_inputs(wildcards):
    """Per problem set: every fixed-B_problem study's fits (Fig. 7), every run (Fig. 9)."""
    if wildcards.figure == "fig07_nstar_by_metric":
        mine = [
            s
            for s in STUDIES
            if s.problem_set == wildcards.problem_set and s.kind == "fixed_b_problem"
        ]
        return {"fits": [study_fits(s) for s in mine]}
    runs = [p for p in GRID if p.problem_set == wildcards.problem_set]
    return {"evals": run_files(runs, "evals.parquet")}


def get_recommendation_fits(wildcards):
    """The joint study where there is one, else the first fixed-B_problem study of the set."""
    mine = [s for s in STUDIES if s.problem_set == wildcards.problem_set]
    joint = [s for s in mine if s.kind == "joint"]
    return study_fits((joint or [s for s in mine if s.kind == "fixed_b_problem"])[0])


def figure_paths(figure):
    """Every instance of a figure (one per study of its kind, or per problem set), PNG and PDF."""
    kind = FIGURES[figure]
    if kind == "set":
        folders = [
            problem_set
            for problem_set in PROBLEM_SETS
            if figure != "fig07_nstar_by_metric"
            or any(
                s.problem_set == problem_set and s.kind == "fixed_b_problem"
                for s in STUDIES
            )
        ]
    else:
        folders = [
            f"{s.problem_set}/{s.name}" for s in STUDIES if kind in ("study", s.kind)
        ]
    return [
        f"results/figures/{folder}/{figure}.{ext}"
        for folder in folders
        for ext in ("png", "pdf")
    ]


def recommendation_paths():
    if not config["recommend"]["compute"]:
        return []
    with_fits = sorted(
        {s.problem_set for s in STUDIES if s.kind in ("joint", "fixed_b_problem")}
    )
    return [f"results/recommendations/{p}.md" for p in with_fits]


def get_study_outputs():
    """The study's answers: every figure, the recommendations and the table of all evaluations."""
    return [
        *(path for figure in FIGURES for path in figure_paths(figure)),
        *recommendation_paths(),
        "results/evaluation/evals.csv",
    ]


def get_final_output():
    """Everything `snakemake` with no target builds: the study's answers and the results index."""
    return [*get_study_outputs(), "results/README.md"]
