"""Draw the interference probe's figure (rule plot_interference)."""

import json
from pathlib import Path

import pandas as pd

from isocompute.config import figure_style
from isocompute.diagnostic_figures import plot_probe
from isocompute.workflow import start_job

start_job(snakemake.log[0])
plot_probe(
    json.loads(Path(snakemake.input.probe).read_text()),
    pd.read_parquet(snakemake.input.pairs),
    f"interference probe: {snakemake.wildcards.probe.replace('+', ', ')}",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
