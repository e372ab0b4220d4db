# Stage 7: per-curve sigmoid fits, the compute-optimal frontier and the optimum's sigmoid, per study,
# for avg@k, best@k and worst@k, with bootstrap intervals over validation problems.


localrules:
    fit_study,
    fit_study_on,
    recommend_allocation,


def get_study_fit_inputs(wildcards):
    runs = study_of(wildcards).runs(GRID)
    return {
        "evals": run_files(runs, "evals.parquet"),
        "val_counts": run_files(runs, "val_counts.parquet"),
        "base": results(f"evaluation/{wildcards.problem_set}/base_model.parquet"),
        "base_counts": results(
            f"evaluation/{wildcards.problem_set}/base_counts.parquet"
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


rule fit_study:
    input:
        unpack(get_study_fit_inputs),
    output:
        fits=results("fits/{problem_set}/{study}/fits.json"),
    log:
        logs("fit_study/{problem_set}/{study}.log"),
    benchmark:
        benchmarks("fit_study/{problem_set}/{study}.tsv")
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        fits=config["fits"],
        k=config["evaluation"]["k"],
        learning_rate=study_lr,
        seed=config["seed"],
    script:
        "../workflow/scripts/fit_study.py"


rule fit_study_on:
    input:
        unpack(get_study_fit_on_inputs),
    output:
        fits=results("fits/{problem_set}/{study}/on_{eval_set}/fits.json"),
    log:
        logs("fit_study_on/{problem_set}/{study}/{eval_set}.log"),
    benchmark:
        benchmarks("fit_study_on/{problem_set}/{study}/{eval_set}.tsv")
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        fits=config["fits"],
        k=config["evaluation"]["k"],
        learning_rate=study_lr,
        seed=config["seed"],
    script:
        "../workflow/scripts/fit_study.py"


rule recommend_allocation:
    input:
        fits=get_recommendation_fits,
    output:
        advice=results("recommendations/{problem_set}.md"),
        table=results("recommendations/{problem_set}.json"),
    log:
        logs("recommend_allocation/{problem_set}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        compute=config["recommend"]["compute"],
        metric=config["fits"]["metric"],
    script:
        "../workflow/scripts/recommend_allocation.py"
