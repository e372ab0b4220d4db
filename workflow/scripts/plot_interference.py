"""Draw the interference probe's figure (rule plot_interference), with the function the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import named_inputs_of, start_job

start_job(snakemake.log[0])
FIGURES["interference"].drawing()(
    "interference",
    named_inputs_of(snakemake),
    f"interference probe: {snakemake.wildcards.probe.replace('+', ', ')}",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
