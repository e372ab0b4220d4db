# The input functions and values of rules/figures.smk's rules (the Snakemake linter keeps functions out of
# files with rules). Each figure's inputs are the names its registry entry lists
# (`isocompute.figures.registry`); the functions here say which files each name is at each rule's level.
def base_model_evaluation(problem_set):
    return [results(f"evaluation/{problem_set}/base_model.parquet")]


def get_study_figure_inputs(wildcards):
    """What a per-study figure reads: the study's fits, the base model's evaluation, its extreme runs' pass rates."""
    study = study_of(wildcards)

    def pass_rates():
        runs = sorted(study.runs(GRID), key=lambda p: (p.seed, p.n))
        extremes = [runs[0], max(runs, key=lambda p: (p.n, -p.seed))]
        return run_files(extremes, "train_pass_rates.parquet")

    return figure_inputs(
        wildcards.figure,
        {
            "fits": lambda: [study_fits(study)],
            "base": lambda: base_model_evaluation(study.problem_set),
            "pass_rates": pass_rates,
        },
    )


def get_set_figure_inputs(wildcards):
    """What a per-set figure reads: every fixed-B_problem study's fits (Fig. 7), every run's evaluation (Fig. 9)."""
    problem_set = wildcards.problem_set
    return figure_inputs(
        wildcards.figure,
        {
            "fits": lambda: [
                study_fits(s)
                for s in STUDIES
                if s.problem_set == problem_set and s.kind == "fixed_b_problem"
            ],
            "evals": lambda: run_files(
                [p for p in GRID if p.problem_set == problem_set and p.is_default],
                "evals.parquet",
            ),
        },
    )


def ablation_of(wildcards):
    return ABLATIONS[(wildcards.problem_set, wildcards.ablation)]


def get_recipe_ablation_figure_inputs(wildcards):
    """What a recipe ablation's figure reads: its runs' training logs and evaluations, the base model's."""
    runs = ablation_of(wildcards).runs
    return figure_inputs(
        wildcards.figure,
        {
            "logs": lambda: run_files(runs, "train_log.parquet", stage="train"),
            "evals": lambda: run_files(runs, "evals.parquet"),
            "base": lambda: base_model_evaluation(wildcards.problem_set),
        },
    )


def ablation_runs(wildcards):
    """Each run of an ablation study as plain values: what its figures label and compare."""
    return [
        study_config.run_description(config, p) for p in ablation_of(wildcards).runs
    ]
