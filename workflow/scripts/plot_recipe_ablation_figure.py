"""Draw one figure of a recipe ablation study (rule plot_recipe_ablation_figure), with the function its entry in
the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import named_inputs_of, start_job

start_job(snakemake.log[0])
wildcards = snakemake.wildcards
FIGURES[wildcards.figure].drawing()(
    wildcards.figure,
    named_inputs_of(snakemake),
    snakemake.params.runs,
    f"{wildcards.problem_set} / {wildcards.ablation}: {wildcards.figure}",
    snakemake.params.metric,
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
