# Stage 6: avg@k, best@k, worst@k per checkpoint on validation; pass rates on a training sample.


include: "inputs/evaluate.smk"


localrules:
    gather_evaluations,


rule import_out_of_domain:
    output:
        table=results("out_of_domain/{eval_set}.parquet"),
        excluded=results("out_of_domain/{eval_set}_excluded.parquet"),
    log:
        logs("import_out_of_domain/{eval_set}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        table=lambda wildcards: OUT_OF_DOMAIN[wildcards.eval_set],
        checker=config["problems"]["checker"],
    script:
        "../workflow/scripts/import_problem_table.py"


# Per evaluation set (a problem set's validation set or an out-of-domain table): the base model there.
rule evaluate_base_model:
    input:
        val=get_eval_table,
        model=get_base_model_input(),
    output:
        evals=results("evaluation/{eval_set}/base_model.parquet"),
        counts=results("evaluation/{eval_set}/base_counts.parquet"),
    log:
        logs("evaluate_base_model/{eval_set}.log"),
    benchmark:
        benchmarks("evaluate_base_model/{eval_set}.tsv")
    conda:
        study_config.conda_env(config, "evaluate_base_model")
    threads: 1
    resources:
        **study_config.rule_resources(config, "evaluate_base_model"),
    params:
        **sampler_params(),
        k=config["evaluation"]["k"],
    script:
        "../workflow/scripts/evaluate_base_model.py"


rule evaluate_run:
    input:
        val=results("problem_sets/{problem_set}/val.parquet"),
        train=results("problem_sets/{problem_set}/train.parquet"),
        checkpoints=results("train/{problem_set}/{run}/checkpoints.json"),
    output:
        evals=results("evaluation/{problem_set}/{run}/evals.parquet"),
        val_counts=results("evaluation/{problem_set}/{run}/val_counts.parquet"),
        train_pass_rates=results(
            "evaluation/{problem_set}/{run}/train_pass_rates.parquet"
        ),
    log:
        logs("evaluate_run/{problem_set}/{run}.log"),
    benchmark:
        benchmarks("evaluate_run/{problem_set}/{run}.tsv")
    wildcard_constraints:
        run=one_of(FULL_RUNS),
    conda:
        study_config.conda_env(config, "evaluate_run")
    threads: 1
    resources:
        **study_config.rule_resources(config, "evaluate_run"),
    params:
        **sampler_params("sampling", "generation", "checker", "seed"),
        point=point_of,
        evaluation=settings_of("evaluation"),
    script:
        "../workflow/scripts/evaluate_run.py"


rule evaluate_run_on:
    input:
        val=get_eval_table,
        checkpoints=results("train/{problem_set}/{run}/checkpoints.json"),
    output:
        evals=results("evaluation/{problem_set}/{run}/on_{eval_set}/evals.parquet"),
        val_counts=results(
            "evaluation/{problem_set}/{run}/on_{eval_set}/val_counts.parquet"
        ),
    log:
        logs("evaluate_run_on/{problem_set}/{run}/{eval_set}.log"),
    benchmark:
        benchmarks("evaluate_run_on/{problem_set}/{run}/{eval_set}.tsv")
    conda:
        study_config.conda_env(config, "evaluate_run_on")
    threads: 1
    resources:
        **study_config.rule_resources(config, "evaluate_run_on"),
    params:
        **sampler_params("sampling", "generation", "checker", "seed"),
        point=point_of,
        k=config["evaluation"]["k"],
    script:
        "../workflow/scripts/evaluate_run_on.py"


rule gather_evaluations:
    input:
        evals=run_files(GRID, "evals.parquet"),
    output:
        table=results("evaluation/evals.csv"),
    log:
        logs("gather_evaluations.log"),
    conda:
        "../envs/isocompute.yaml"
    script:
        "../workflow/scripts/gather_evaluations.py"
