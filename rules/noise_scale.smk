# GRPO's per-rollout gradient noise scale B(n) along one run of each fixed-B_problem study, and the n it
# predicts beside the frontier's n* (`snakemake measure_noise_scale_all`; not part of the default target).
# A prediction, never mixed into the fits: docs/log/noise-scale.md says how often it agreed.


include: "inputs/noise_scale.smk"


rule measure_noise_scale:
    input:
        unpack(get_noise_scale_inputs),
    output:
        scales=results("noise_scale/{problem_set}/{study}/noise_scale.parquet"),
        agreement=results("noise_scale/{problem_set}/{study}/agreement.json"),
    log:
        logs("measure_noise_scale/{problem_set}/{study}.log"),
    benchmark:
        benchmarks("measure_noise_scale/{problem_set}/{study}.tsv")
    conda:
        "../envs/isocompute.yaml"
    threads: 1
    params:
        **sampler_params("pretrained", "sampling", "checker", "seed"),
        run=lambda wildcards: noise_scale_run(wildcards).run,
        settings=config["noise_scale"],
        loss_type=config["training"]["loss_type"],
        metric=config["fits"]["metric"],
    script:
        "../workflow/scripts/measure_noise_scale.py"


rule measure_noise_scale_all:
    input:
        noise_scale_paths(),
