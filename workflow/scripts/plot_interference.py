"""Draw the interference probe's figure (rule plot_interference), with the function the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
FIGURES["interference"].drawing()(
    "interference",
    {name: list(files) for name, files in snakemake.input.items()},
    f"interference probe: {snakemake.wildcards.probe.replace('+', ', ')}",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
