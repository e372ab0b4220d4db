"""Draw one data-ablation figure: Fig. 14, 15, 20 or 21 (rule plot_data_figure)."""

import json
from pathlib import Path

import pandas as pd

from isocompute.figures.data_ablation import plot_extremely_hard, plot_mixtures, plot_train_vs_val
from isocompute.script_setup import start_job
from isocompute.study.config import figure_style

start_job(snakemake.log[0])
params = snakemake.params
figure = snakemake.wildcards.data_figure
style = figure_style(params.figures)
paths = [snakemake.output.png, snakemake.output.pdf]
fits = [json.loads(Path(path).read_text()) for path in snakemake.input.fits]
bases = [pd.read_parquet(path).iloc[0] for path in snakemake.input.base]
title = f"{figure}: {', '.join(params.labels)} ({fits[0]['study']['name']})"
if figure == "fig20_extremely_hard":
    plot_extremely_hard(fits[0], bases[0], params.k, title, style, paths)
elif figure in ("fig15_mixtures", "fig21_out_of_domain"):
    sets = [(label, fit, float(base[params.metric])) for label, fit, base in zip(params.labels, fits, bases)]
    plot_mixtures(sets, params.metric, title, style, paths)
elif figure == "fig14_train_vs_val":
    training = [json.loads(Path(path).read_text()) for path in snakemake.input.train_fits]
    plot_train_vs_val(params.sizes, fits, training, [float(b[params.metric]) for b in bases], params.metric, title,
                      style, paths)  # fmt: skip
else:
    raise ValueError(f"unknown data-ablation figure {figure!r}")
