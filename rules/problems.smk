# Stage 1: the problem pool, as the pipeline's problem table (id, prompt, answer).


include: "inputs/problems.smk"


if config["problems"]["source"] != "table":

    rule make_problem_pool:
        output:
            pool=results("problems/pool.parquet"),
        log:
            logs("make_problem_pool.log"),
        conda:
            "../envs/isocompute.yaml"
        params:
            **study_config.pool_params(config),
        script:
            "../workflow/scripts/make_problem_pool.py"

else:

    rule import_problem_table:
        output:
            pool=results("problems/pool.parquet"),
            excluded=results("problems/excluded.parquet"),
        log:
            logs("import_problem_table.log"),
        conda:
            "../envs/isocompute.yaml"
        params:
            table=config["problems"]["table"],
            checker=config["problems"]["checker"],
        script:
            "../workflow/scripts/import_problem_table.py"
