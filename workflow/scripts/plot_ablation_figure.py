"""Draw one figure of a recipe ablation study (rule plot_ablation_figure)."""

from isocompute.recipe_ablation_figures import render
from isocompute.config import figure_style
from isocompute.workflow import start_job

start_job(snakemake.log[0])
wildcards = snakemake.wildcards
render(
    wildcards.figure,
    {name: list(files) for name, files in snakemake.input.items()},
    snakemake.params.runs,
    f"{wildcards.problem_set} / {wildcards.ablation}: {wildcards.figure}",
    snakemake.params.metric,
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
