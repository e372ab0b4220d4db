# Stage 4: the problem sets, each on its own from its definition (a bucket, a staged pass@k bucket or a
# mixture): validation problems from one seeded reserve of the pool, training problems from the rest.


include: "inputs/problem_sets.smk"


localrules:
    build_problem_sets,


rule score_pass_at:
    input:
        pool=get_problem_pool(),
        difficulty=results("difficulty/problem_difficulty.parquet"),
        model=get_base_model_input(),
    output:
        table=results("difficulty/pass_at{k}.parquet"),
        summary=results("difficulty/pass_at{k}.json"),
    log:
        logs("score_pass_at/pass_at{k}.log"),
    benchmark:
        benchmarks("score_pass_at/pass_at{k}.tsv")
    conda:
        study_config.conda_env(config, "score_pass_at")
    threads: 1
    resources:
        **study_config.rule_resources(config, "score_pass_at"),
    params:
        **sampler_params(),
    script:
        "../workflow/scripts/score_pass_at.py"


rule build_problem_sets:
    input:
        unpack(get_problem_set_inputs),
    output:
        train=results("problem_sets/{problem_set}/train.parquet"),
        val=results("problem_sets/{problem_set}/val.parquet"),
        summary=results("problem_sets/{problem_set}/summary.json"),
    log:
        logs("build_problem_sets/{problem_set}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        # Only this set's own definition: adding or changing another set rebuilds (and retrains) nothing.
        build=lambda wildcards: PROBLEM_SETS[wildcards.problem_set]["build"],
        validation_share=config["difficulty"]["validation_share"],
        seed=config["seed"],
    script:
        "../workflow/scripts/build_problem_sets.py"
