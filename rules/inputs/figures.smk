# The input functions and values of rules/figures.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_study_figure_inputs(wildcards):
    """What each per-study figure reads: the study's fits, plus evaluations where it draws them."""
    study = study_of(wildcards)
    inputs = {"fits": [study_fits(study)]}
    if wildcards.figure in ("fig05_frontier", "fig10_joint_frontier"):
        inputs["base"] = [results(f"evaluation/{study.problem_set}/base_model.parquet")]
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
    runs = [p for p in GRID if p.problem_set == wildcards.problem_set and p.is_default]
    return {"evals": run_files(runs, "evals.parquet")}


def ablation_of(wildcards):
    return ABLATIONS[(wildcards.problem_set, wildcards.ablation)]


def get_ablation_figure_inputs(wildcards):
    """An ablation study's runs: training logs and evaluations, and the base model's evaluation."""
    runs = ablation_of(wildcards).runs
    return {
        "logs": run_files(runs, "train_log.parquet", stage="train"),
        "evals": run_files(runs, "evals.parquet"),
        "base": [results(f"evaluation/{wildcards.problem_set}/base_model.parquet")],
    }


def ablation_runs(wildcards):
    """Each run of an ablation study as plain values: what its figures label and compare."""
    return [
        study_config.run_description(config, p) for p in ablation_of(wildcards).runs
    ]
