"""Draw a study's training diagnostics (rule plot_diagnostics), with the function the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import named_inputs_of, start_job

start_job(snakemake.log[0])
wildcards = snakemake.wildcards
FIGURES["diagnostics"].drawing()(
    "diagnostics",
    named_inputs_of(snakemake),
    f"{wildcards.problem_set} / {wildcards.study}: training diagnostics",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
    by=snakemake.params.study.by,
    train_k=snakemake.params.train_k,
)
