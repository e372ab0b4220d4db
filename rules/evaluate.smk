# Stage 6: avg@k, best@k, worst@k per checkpoint on validation; pass rates on a training sample.


rule evaluate_base_model:
    input:
        val=results("problem_sets/{problem_set}/val.parquet"),
        model=get_base_model_input(),
    output:
        evals=results("evaluation/{problem_set}/base_model.parquet"),
        counts=results("evaluation/{problem_set}/base_counts.parquet"),
    log:
        logs("evaluate_base_model/{problem_set}.log"),
    conda:
        "../envs/isocompute.yaml"
    threads: 1
    resources:
        **study_config.rule_resources(config, "evaluate_base_model"),
    params:
        pretrained=config["base_model"]["pretrained"],
        k=config["evaluation"]["k"],
        sampling=config["sampling"],
        generation=config["generation"],
        checker=config["problems"]["checker"],
        seed=config["seed"],
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
    conda:
        "../envs/isocompute.yaml"
    threads: 1
    resources:
        **study_config.rule_resources(config, "evaluate_run"),
    params:
        point=point_of,
        evaluation=config["evaluation"],
        sampling=config["sampling"],
        generation=config["generation"],
        checker=config["problems"]["checker"],
        seed=config["seed"],
    script:
        "../workflow/scripts/evaluate_run.py"


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
