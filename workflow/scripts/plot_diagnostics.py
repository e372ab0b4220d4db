"""Draw a study's training diagnostics (rule plot_diagnostics)."""

import pandas as pd

from isocompute.figures.mechanism import plot_training_diagnostics
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
wildcards = snakemake.wildcards
plot_training_diagnostics(
    pd.read_parquet(snakemake.input.table),
    pd.read_parquet(snakemake.input.nstar),
    snakemake.params.study.by,
    snakemake.params.train_k,
    f"{wildcards.problem_set} / {wildcards.study}: training diagnostics",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
