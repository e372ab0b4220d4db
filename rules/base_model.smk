# Stage 2: the base model the embedded default trains itself (skipped when base_model.pretrained is set).


include: "inputs/base_model.smk"


rule pretrain_base_model:
    output:
        model=directory(results("base_model/model")),
        losses=results("base_model/pretrain_log.parquet"),
    log:
        logs("pretrain_base_model.log"),
    benchmark:
        benchmarks("pretrain_base_model.tsv")
    conda:
        study_config.conda_env(config, "pretrain_base_model")
    threads: 1
    resources:
        **study_config.rule_resources(config, "pretrain_base_model"),
    params:
        settings=study_config.pretraining_settings(config),
        seed=config["seed"],
    script:
        "../workflow/scripts/pretrain_base_model.py"
