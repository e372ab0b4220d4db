# Stage 2: the base model the embedded default trains itself (skipped when base_model.pretrained is set).


rule pretrain_base_model:
    output:
        model=directory("results/base_model/model"),
        losses="results/base_model/pretrain_log.parquet",
    log:
        "logs/pretrain_base_model.log",
    benchmark:
        "benchmarks/pretrain_base_model.tsv"
    conda:
        "../envs/isocompute.yaml"
    threads: 1
    params:
        spec=(
            study.base_model_spec(config)
            if not config["base_model"]["pretrained"]
            else None
        ),
        seed=config["seed"],
    script:
        "../workflow/scripts/pretrain_base_model.py"
