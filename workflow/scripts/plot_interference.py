"""Draw the interference probe's figure (rule plot_interference)."""

import json
from pathlib import Path

import pandas as pd

from isocompute.figures.mechanism import plot_probe
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
plot_probe(
    json.loads(Path(snakemake.input.probe).read_text()),
    pd.read_parquet(snakemake.input.pairs),
    f"interference probe: {snakemake.wildcards.probe.replace('+', ', ')}",
    figure_style(snakemake.params.figures),
    [snakemake.output.png, snakemake.output.pdf],
)
