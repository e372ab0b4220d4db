# The study's targets: what `snakemake` with no target builds, each figure as its own target
# (`snakemake fig05_frontier`), and the results index over them.


include: "inputs/targets.smk"


localrules:
    write_results_index,


for figure_name in FIGURES:

    rule:
        name:
            figure_name
        input:
            figure_paths(figure_name),


for data_figure_name in DATA_FIGURES:

    rule:
        name:
            data_figure_name
        input:
            data_figure_paths(data_figure_name),


rule write_results_index:
    input:
        get_study_outputs(),
    output:
        index=results("README.md"),
    log:
        logs("write_results_index.log"),
    conda:
        "../envs/isocompute.yaml"
    script:
        "../workflow/scripts/write_results_index.py"
