# Stage 3: difficulty bucketing, avg@k of the base model per problem, sharded over problems.


include: "inputs/difficulty.smk"


localrules:
    gather_difficulty,


rule score_difficulty:
    input:
        pool=get_problem_pool(),
        model=get_base_model_input(),
    output:
        shard=results("difficulty/shards/shard{shard}.parquet"),
    log:
        logs("score_difficulty/shard{shard}.log"),
    benchmark:
        benchmarks("score_difficulty/shard{shard}.tsv")
    conda:
        study_config.conda_env(config, "score_difficulty")
    threads: 1
    resources:
        **study_config.rule_resources(config, "score_difficulty"),
    params:
        **sampler_params(),
        difficulty={key: config["difficulty"][key] for key in ("samples", "shards")},
    script:
        "../workflow/scripts/score_difficulty.py"


rule gather_difficulty:
    input:
        shards=get_difficulty_shards(),
    output:
        difficulty=results("difficulty/problem_difficulty.parquet"),
    log:
        logs("gather_difficulty.log"),
    conda:
        "../envs/isocompute.yaml"
    script:
        "../workflow/scripts/gather_difficulty.py"
