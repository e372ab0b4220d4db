# Stage 9: the mechanism made measurable. The paper's diagnostics of every study (the share of training
# problems with pass@k = 0 and of zero-variance groups over compute, n* by metric), and the interference
# probe of the base model on problem sets (`snakemake probe_interference_all`: every set of the grid together).


include: "inputs/diagnostics.smk"


localrules:
    tabulate_diagnostics,
    plot_diagnostics,
    plot_interference,


rule tabulate_diagnostics:
    input:
        unpack(get_train_fit_inputs),
        fits=results("fits/{problem_set}/{study}/fits.json"),
        train=results("problem_sets/{problem_set}/train.parquet"),
    output:
        table=results("diagnostics/{problem_set}/{study}/training.parquet"),
        nstar=results("diagnostics/{problem_set}/{study}/nstar_by_metric.parquet"),
    log:
        logs("tabulate_diagnostics/{problem_set}/{study}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        window=config["data_ablations"]["train_reward_window"],
        train_k=config["evaluation"]["train_k"],
    script:
        "../workflow/scripts/tabulate_diagnostics.py"


rule plot_diagnostics:
    input:
        table=[results("diagnostics/{problem_set}/{study}/training.parquet")],
        nstar=[results("diagnostics/{problem_set}/{study}/nstar_by_metric.parquet")],
    output:
        png=report(
            results("figures/{problem_set}/{study}/diagnostics.png"),
            caption="../workflow/report/diagnostics.rst",
            category="diagnostics",
            subcategory="{problem_set} {study}",
        ),
        pdf=results("figures/{problem_set}/{study}/diagnostics.pdf"),
    log:
        logs("plot_diagnostics/{problem_set}/{study}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        train_k=config["evaluation"]["train_k"],
        figures=config["figures"],
    script:
        "../workflow/scripts/plot_diagnostics.py"


rule probe_interference:
    input:
        sets=lambda wildcards: [
            results(f"problem_sets/{name}/train.parquet")
            for name in wildcards.probe.split("+")
        ],
        model=get_base_model_input(),
    output:
        probe=results("interference/{probe}/probe.json"),
        pairs=results("interference/{probe}/pairs.parquet"),
    log:
        logs("probe_interference/{probe}.log"),
    benchmark:
        benchmarks("probe_interference/{probe}.tsv")
    wildcard_constraints:
        probe=PROBE,
    conda:
        study_config.conda_env(config, "probe_interference")
    threads: 1
    resources:
        **study_config.rule_resources(config, "probe_interference"),
    params:
        sets=lambda wildcards: wildcards.probe.split("+"),
        pretrained=config["base_model"]["pretrained"],
        sampling=config["sampling"],
        training=config["training"],
        checker=config["problems"]["checker"],
        seed=config["seed"],
    script:
        "../workflow/scripts/probe_interference.py"


rule plot_interference:
    input:
        probe=[results("interference/{probe}/probe.json")],
        pairs=[results("interference/{probe}/pairs.parquet")],
    output:
        png=report(
            results("figures/interference/{probe}.png"),
            caption="../workflow/report/interference.rst",
            category="interference",
            subcategory="{probe}",
        ),
        pdf=results("figures/interference/{probe}.pdf"),
    log:
        logs("plot_interference/{probe}.log"),
    wildcard_constraints:
        probe=PROBE,
    conda:
        "../envs/isocompute.yaml"
    params:
        figures=config["figures"],
    script:
        "../workflow/scripts/plot_interference.py"


rule probe_interference_all:
    input:
        probe_interference_paths(),
