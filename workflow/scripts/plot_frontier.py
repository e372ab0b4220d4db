"""Figure 5: reward vs compute per n with the frontier coloured by n* (rule plot_frontier)."""

import json
from pathlib import Path

import pandas as pd

from isocompute.figures import plot_frontier
from isocompute.workflow import start_job

start_job(snakemake.log[0])
fits = json.loads(Path(snakemake.input.fits).read_text())
evals = pd.concat([pd.read_parquet(path) for path in snakemake.input.evals], ignore_index=True)
base = pd.read_parquet(snakemake.input.base)
wildcards = snakemake.wildcards
plot_frontier(
    evals,
    fits,
    float(base[fits["metric"]].iloc[0]),
    f"{wildcards.problem_set}, B_problem = {wildcards.b_problem}",
    snakemake.params.style,
    [snakemake.output.png, snakemake.output.pdf],
)
