# Stage 5-6 of an adaptive sweep (sweep.mode: adaptive): the fixed-B_problem studies' arms trained and
# evaluated rung by rung, one decision per round (docs/reference/adaptive-sweep.md). An adaptive run ends
# under its own names (finish_adaptive_run), so fits, figures and diagnostics read it as a run of the full grid.


include: "inputs/adaptive.smk"


localrules:
    decide_adaptive_round,
    finish_adaptive_run,
    summarize_adaptive_sweep,


use rule train_grpo as train_grpo_rung with:
    input:
        unpack(get_rung_training_inputs),
    output:
        log_table=results("train/{problem_set}/{run}/rung{rung}/train_log.parquet"),
        checkpoints=results("train/{problem_set}/{run}/rung{rung}/checkpoints.json"),
    log:
        logs("train_grpo_rung/{problem_set}/{run}/rung{rung}.log"),
    benchmark:
        benchmarks("train_grpo_rung/{problem_set}/{run}/rung{rung}.tsv")
    wildcard_constraints:
        run=one_of(ADAPTIVE_RUNS),
    conda:
        study_config.conda_env(config, "train_grpo_rung")
    resources:
        **study_config.rule_resources(config, "train_grpo_rung"),
    params:
        **sampler_params("pretrained", "checker"),
        point=point_of,
        settings=run_params,
        # The run's own folder: each rung goes on from the previous rung's last checkpoint.
        run_dir=lambda wildcards: results(
            f"train/{wildcards.problem_set}/{wildcards.run}"
        ),
        until_step=rung_until_step,


use rule evaluate_run as evaluate_run_rung with:
    input:
        val=results("problem_sets/{problem_set}/val.parquet"),
        train=results("problem_sets/{problem_set}/train.parquet"),
        checkpoints=results("train/{problem_set}/{run}/rung{rung}/checkpoints.json"),
    output:
        evals=results("evaluation/{problem_set}/{run}/rung{rung}/evals.parquet"),
        val_counts=results(
            "evaluation/{problem_set}/{run}/rung{rung}/val_counts.parquet"
        ),
        train_pass_rates=results(
            "evaluation/{problem_set}/{run}/rung{rung}/train_pass_rates.parquet"
        ),
    log:
        logs("evaluate_run_rung/{problem_set}/{run}/rung{rung}.log"),
    benchmark:
        benchmarks("evaluate_run_rung/{problem_set}/{run}/rung{rung}.tsv")
    wildcard_constraints:
        run=one_of(ADAPTIVE_RUNS),
    conda:
        study_config.conda_env(config, "evaluate_run_rung")
    resources:
        **study_config.rule_resources(config, "evaluate_run_rung"),
    params:
        **sampler_params("sampling", "generation", "checker", "seed"),
        point=point_of,
        evaluation=settings_of("evaluation"),
        after_step=rung_after_step,
        # The run's own folder, where its checkpoints lie (the rung's folder holds its manifest only).
        run_dir=lambda wildcards: results(
            f"train/{wildcards.problem_set}/{wildcards.run}"
        ),


# One decision per round: cheap and idempotent, on the submit host, in no group. Its `prior` param exists only
# where sweep.prior is set, so a sweep without one keeps its rounds' params.
checkpoint decide_adaptive_round:
    input:
        unpack(get_adaptive_round_inputs),
    output:
        round=results("sweep/{problem_set}/{study}/round{round}.json"),
    log:
        logs("decide_adaptive_round/{problem_set}/{study}/round{round}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        **({"prior": adaptive_prior_of} if ADAPTIVE_PRIOR is not None else {}),
        fits=study_config.round_fit_settings(config),
        k=config["evaluation"]["k"],
        seed=config["seed"],
        settings=lambda wildcards: dataclasses.asdict(ADAPTIVE),
        caps=ADAPTIVE_CAPS,
        rung_steps=adaptive_round_arms,
    script:
        "../workflow/scripts/decide_adaptive_round.py"


rule finish_adaptive_run:
    input:
        unpack(get_finished_run_inputs),
    output:
        log_table=results("train/{problem_set}/{run}/train_log.parquet"),
        checkpoints=results("train/{problem_set}/{run}/checkpoints.json"),
        evals=results("evaluation/{problem_set}/{run}/evals.parquet"),
        val_counts=results("evaluation/{problem_set}/{run}/val_counts.parquet"),
        train_pass_rates=results(
            "evaluation/{problem_set}/{run}/train_pass_rates.parquet"
        ),
    log:
        logs("finish_adaptive_run/{problem_set}/{run}.log"),
    wildcard_constraints:
        run=one_of(ADAPTIVE_RUNS),
    conda:
        "../envs/isocompute.yaml"
    params:
        rungs=finished_rungs,
    script:
        "../workflow/scripts/finish_adaptive_run.py"


rule summarize_adaptive_sweep:
    input:
        unpack(get_adaptive_summary_inputs),
    output:
        summary=results("sweep/{problem_set}/{study}/summary.json"),
        figure=report(
            results("sweep/{problem_set}/{study}/frontier_stops.png"),
            caption="../workflow/report/adaptive.rst",
            category="adaptive sweep",
            subcategory="{problem_set} {study}",
        ),
    log:
        logs("summarize_adaptive_sweep/{problem_set}/{study}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        settings=lambda wildcards: dataclasses.asdict(ADAPTIVE),
        caps=ADAPTIVE_CAPS,
        arms=adaptive_summary_arms,
        metric=config["fits"]["metric"],
        figures=config["figures"],
    script:
        "../workflow/scripts/summarize_adaptive_sweep.py"
