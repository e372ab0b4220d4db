# The input functions and values of rules/data_ablations.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def data_study(problem_set):
    """The study the data ablations' figures draw on a set: the first fixed-B_problem study, where it has one."""
    wanted = config["studies"]["fixed_b_problem"][:1]
    return next(
        (
            s
            for s in STUDIES
            if s.problem_set == problem_set
            and s.kind == "fixed_b_problem"
            and [s.value] == wanted
        ),
        None,
    )


# Each data-ablation figure's instances with the (set, evaluation set) pairs each draws.
DATA_FIGURE_SETS = data_ablation_fits.data_figure_instances(
    PROBLEM_SETS,
    {name: data_study(name).name for name in PROBLEM_SETS if data_study(name)},
    EXTRA_EVALUATION,
    OUT_OF_DOMAIN,
)


def data_figure_sets(wildcards):
    return DATA_FIGURE_SETS[f"{wildcards.data_figure}_{wildcards.instance}"]


def data_figure_labels(wildcards):
    return [
        name if on is None else f"{name} on {on}"
        for name, on in data_figure_sets(wildcards)
    ]


def fits_on(study, eval_set):
    """A study's fits on its own validation set (eval_set None) or on another."""
    if eval_set is None:
        return study_fits(study)
    return results(f"fits/{study.problem_set}/{study.name}/on_{eval_set}/fits.json")


def get_train_fit_inputs(wildcards):
    runs = study_of(wildcards).runs(GRID)
    return {
        "logs": run_files(runs, "train_log.parquet", stage="train"),
        "pass_rates": run_files(runs, "train_pass_rates.parquet"),
    }


def get_data_figure_inputs(wildcards):
    """The fits (and, for Fig. 14, the training metrics' fits) and base model of each set drawn."""
    pairs = data_figure_sets(wildcards)
    return figure_inputs(
        wildcards.data_figure,
        {
            "fits": lambda: [fits_on(data_study(s), on) for s, on in pairs],
            "base": lambda: [
                results(f"evaluation/{on or s}/base_model.parquet") for s, on in pairs
            ],
            "train_fits": lambda: [
                results(f"fits/{s}/{data_study(s).name}/train_fits.json")
                for s, _ in pairs
            ],
        },
    )
