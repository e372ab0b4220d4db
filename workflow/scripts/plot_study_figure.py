"""Draw one of the paper's figures (rules plot_study_figure, plot_study_figure_on and plot_set_figure), with
the function its entry in the figure registry names."""

from isocompute.figures.registry import FIGURES
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import named_inputs_of, start_job

start_job(snakemake.log[0])
wildcards = snakemake.wildcards
where = " / ".join(w for w in (wildcards.problem_set, wildcards.get("study", "")) if w)
if wildcards.get("eval_set"):
    where += f" on {wildcards.eval_set}"
FIGURES[wildcards.figure].drawing()(
    wildcards.figure,
    named_inputs_of(snakemake),
    f"{where}: {wildcards.figure}",
    snakemake.params.metric,
    snakemake.params.k,
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
