# Stage 5: one TRL GRPO run per grid point, checkpointed at compute points spaced evenly in log C.


rule train_grpo:
    input:
        train=results("problem_sets/{problem_set}/train.parquet"),
        model=get_base_model_input(),
    output:
        log_table=results("train/{problem_set}/{run}/train_log.parquet"),
        checkpoints=results("train/{problem_set}/{run}/checkpoints.json"),
    log:
        logs("train_grpo/{problem_set}/{run}.log"),
    benchmark:
        benchmarks("train_grpo/{problem_set}/{run}.tsv")
    wildcard_constraints:
        run=one_of(FULL_RUNS),
    conda:
        study_config.conda_env(config, "train_grpo")
    # One core per training process: on a CPU they are the run's devices.
    threads: config["training"]["processes"]
    resources:
        **study_config.rule_resources(config, "train_grpo"),
    params:
        **sampler_params("pretrained", "checker"),
        point=point_of,
        # Only this run's own recipe and learning rate, so adding a recipe or an ablation reruns no
        # finished run. The layout (training.processes, training.vllm's memory share, ...) is read from
        # snakemake.config by the script, not passed here: moving a study to more GPUs, or giving vLLM
        # less memory, must not rerun its finished runs.
        settings=run_params,
        run_dir=lambda wildcards, output: os.path.dirname(output.checkpoints),
    script:
        "../workflow/scripts/train_grpo.py"
