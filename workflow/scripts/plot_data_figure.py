"""Draw one data-ablation figure: Fig. 14, 15, 20 or 21 (rule plot_data_figure), with the function its entry in
the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import named_inputs_of, start_job

start_job(snakemake.log[0])
params = snakemake.params
figure = snakemake.wildcards.data_figure
FIGURES[figure].drawing()(
    figure,
    named_inputs_of(snakemake),
    params.labels,
    params.sizes,
    params.metric,
    params.k,
    figure_style(params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
