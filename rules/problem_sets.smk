# Stage 4: Easy/Hard (or any configured) train and validation sets, disjoint, drawn from the buckets.


rule build_problem_sets:
    input:
        pool=get_problem_pool(),
        difficulty=results("difficulty/problem_difficulty.parquet"),
    output:
        train=expand(
            results("problem_sets/{problem_set}/train.parquet"),
            problem_set=config["problem_sets"],
        ),
        val=expand(
            results("problem_sets/{problem_set}/val.parquet"),
            problem_set=config["problem_sets"],
        ),
        summary=results("problem_sets/summary.json"),
    log:
        logs("build_problem_sets.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        settings=config_slice("problem_sets"),
        seed=config["seed"],
    script:
        "../workflow/scripts/build_problem_sets.py"
