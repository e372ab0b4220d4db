# Stage 9: the data ablations (Figs. 14, 15, 20, 21): the training metrics fitted beside the validation ones,
# and the figures comparing sets. Each figure is a target (`snakemake fig20_extremely_hard`).


include: "inputs/data_ablations.smk"


localrules:
    fit_train_metrics,
    plot_data_figure,


rule fit_train_metrics:
    input:
        unpack(get_train_fit_inputs),
    output:
        fits=results("fits/{problem_set}/{study}/train_fits.json"),
    log:
        logs("fit_train_metrics/{problem_set}/{study}.log"),
    benchmark:
        benchmarks("fit_train_metrics/{problem_set}/{study}.tsv")
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        method=study_fit.METHOD,
        fits=config["fits"],
        window=config["data_ablations"]["train_reward_window"],
    script:
        "../workflow/scripts/fit_train_metrics.py"


rule plot_data_figure:
    input:
        unpack(get_data_figure_inputs),
    output:
        png=report(
            results("figures/data/{data_figure}_{instance}.png"),
            caption="../workflow/report/figure.rst",
            category="{data_figure}",
            subcategory="{instance}",
        ),
        pdf=results("figures/data/{data_figure}_{instance}.pdf"),
    log:
        logs("plot_data_figure/{data_figure}_{instance}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        labels=data_figure_labels,
        sizes=lambda wildcards: [
            PROBLEM_SETS[s]["build"]["train_size"]
            for s, _ in data_figure_sets(wildcards)
        ],
        figures=config["figures"],
        metric=config["fits"]["metric"],
        k=config["evaluation"]["k"],
    script:
        "../workflow/scripts/plot_data_figure.py"
