# Stage 8: the paper's figures. Each is its own target (`snakemake fig05_frontier`) and reads only
# evaluation tables and fits, so restyling one never retrains or refits anything. What each figure reads,
# draws with and is captioned with is its entry in the figure registry (`isocompute.figures.registry`).


include: "inputs/figures.smk"


localrules:
    plot_study_figure,
    plot_study_figure_on,
    plot_set_figure,
    plot_recipe_ablation_figure,


rule plot_study_figure:
    input:
        unpack(get_study_figure_inputs),
    output:
        png=report(
            results("figures/{problem_set}/{study}/{figure}.png"),
            caption="../workflow/report/figure.rst",
            category="{figure}",
            subcategory="{problem_set} {study}",
        ),
        pdf=results("figures/{problem_set}/{study}/{figure}.pdf"),
    log:
        logs("plot_study_figure/{problem_set}/{study}/{figure}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        figures=config["figures"],
        metric=config["fits"]["metric"],
        k=config["evaluation"]["k"],
    script:
        "../workflow/scripts/plot_study_figure.py"


use rule plot_study_figure as plot_study_figure_on with:
    input:
        fits=[results("fits/{problem_set}/{study}/on_{eval_set}/fits.json")],
        base=[results("evaluation/{eval_set}/base_model.parquet")],
    output:
        png=report(
            results("figures/{problem_set}/{study}/on_{eval_set}/{figure}.png"),
            caption="../workflow/report/figure.rst",
            category="{figure}",
            subcategory="{problem_set} {study} on {eval_set}",
        ),
        pdf=results("figures/{problem_set}/{study}/on_{eval_set}/{figure}.pdf"),
    log:
        logs("plot_study_figure_on/{problem_set}/{study}/{eval_set}/{figure}.log"),
    wildcard_constraints:
        figure=one_of(FIGURES_ON_OTHER_SETS),


use rule plot_study_figure as plot_set_figure with:
    input:
        unpack(get_set_figure_inputs),
    output:
        png=report(
            results("figures/{problem_set}/{figure}.png"),
            caption="../workflow/report/figure.rst",
            category="{figure}",
            subcategory="{problem_set}",
        ),
        pdf=results("figures/{problem_set}/{figure}.pdf"),
    log:
        logs("plot_set_figure/{problem_set}/{figure}.log"),


rule plot_recipe_ablation_figure:
    input:
        unpack(get_recipe_ablation_figure_inputs),
    output:
        png=report(
            results("figures/{problem_set}/{ablation}/{figure}.png"),
            caption="../workflow/report/figure.rst",
            category="{figure}",
            subcategory="{problem_set} {ablation}",
        ),
        pdf=results("figures/{problem_set}/{ablation}/{figure}.pdf"),
    log:
        # The rule's name before it said "recipe": its logs keep their folder.
        logs("plot_ablation_figure/{problem_set}/{ablation}/{figure}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        runs=ablation_runs,
        figures=config["figures"],
        metric=config["fits"]["metric"],
    script:
        "../workflow/scripts/plot_recipe_ablation_figure.py"
