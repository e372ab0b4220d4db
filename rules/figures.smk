# Stage 8: the paper's figures, each its own target; `snakemake fig05_frontier` rebuilds only that one.


rule plot_frontier:
    input:
        evals=get_fit_evals,
        fits="results/fits/{problem_set}/bp{b_problem}/fits.json",
        base="results/evaluation/{problem_set}/base_model.parquet",
    output:
        png=report(
            "results/figures/{problem_set}/bp{b_problem}/fig05_frontier.png",
            caption="../workflow/report/fig05_frontier.rst",
            category="Compute-optimal frontier",
            subcategory="{problem_set}",
        ),
        pdf="results/figures/{problem_set}/bp{b_problem}/fig05_frontier.pdf",
    log:
        "logs/plot_frontier/{problem_set}/bp{b_problem}.log",
    conda:
        "../envs/isocompute.yaml"
    params:
        style=study.figure_style(config),
    script:
        "../workflow/scripts/plot_frontier.py"


rule plot_nstar:
    input:
        fits="results/fits/{problem_set}/bp{b_problem}/fits.json",
    output:
        png=report(
            "results/figures/{problem_set}/bp{b_problem}/fig06_nstar.png",
            caption="../workflow/report/fig06_nstar.rst",
            category="Compute-optimal n",
            subcategory="{problem_set}",
        ),
        pdf="results/figures/{problem_set}/bp{b_problem}/fig06_nstar.pdf",
    log:
        "logs/plot_nstar/{problem_set}/bp{b_problem}.log",
    conda:
        "../envs/isocompute.yaml"
    params:
        style=study.figure_style(config),
    script:
        "../workflow/scripts/plot_nstar.py"


rule fig05_frontier:
    input:
        figure_paths("fig05_frontier"),


rule fig06_nstar:
    input:
        figure_paths("fig06_nstar"),


rule write_results_index:
    input:
        get_study_outputs(),
    output:
        index="results/README.md",
    log:
        "logs/write_results_index.log",
    conda:
        "../envs/isocompute.yaml"
    script:
        "../workflow/scripts/write_results_index.py"
