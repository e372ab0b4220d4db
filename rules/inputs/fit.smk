# The input functions and values of rules/fit.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_study_fit_inputs(wildcards):
    """A study's runs and the base model's; for an adaptive sweep's study also its last round, which says
    which arms the sweep's rule stopped, where and why (they are settled, not censored, in its fit).
    """
    runs = study_of(wildcards).runs(GRID)
    adaptive = (wildcards.problem_set, wildcards.study) in ADAPTIVE_STUDIES
    where = f"{wildcards.problem_set}/{wildcards.study}"
    return {
        "evals": run_files(runs, "evals.parquet"),
        "val_counts": run_files(runs, "val_counts.parquet"),
        "base": results(f"evaluation/{wildcards.problem_set}/base_model.parquet"),
        "base_counts": results(
            f"evaluation/{wildcards.problem_set}/base_counts.parquet"
        ),
        "last_round": (
            [results(f"sweep/{where}/round{len(ADAPTIVE_CAPS) - 2}.json")]
            if adaptive
            else []
        ),
    }


def study_lr(wildcards):
    """The learning-rate settings of the study's runs, for the learning rate of a recommendation."""
    (lr,) = {study_config.run_lr(config, p) for p in study_of(wildcards).runs(GRID)}
    return {"lr_rule": lr.rule, "lr_base": lr.base, "lr_batch_ref": lr.batch_ref}


def get_study_fit_on_inputs(wildcards):
    """A study's runs evaluated on another validation set, and the base model there."""
    runs = study_of(wildcards).runs(GRID)
    on = f"on_{wildcards.eval_set}"
    return {
        "evals": run_files(runs, f"{on}/evals.parquet"),
        "val_counts": run_files(runs, f"{on}/val_counts.parquet"),
        "base": results(f"evaluation/{wildcards.eval_set}/base_model.parquet"),
        "base_counts": results(f"evaluation/{wildcards.eval_set}/base_counts.parquet"),
    }


def get_recommendation_fits(wildcards):
    """The joint study where there is one, else the first fixed-B_problem study of the set."""
    mine = [s for s in STUDIES if s.problem_set == wildcards.problem_set]
    joint = [s for s in mine if s.kind == "joint"]
    return study_fits((joint or [s for s in mine if s.kind == "fixed_b_problem"])[0])
