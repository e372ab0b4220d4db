"""The training reward and training pass rate of a study's runs, fitted like validation (rule fit_train_metrics)."""

import logging
from pathlib import Path

import pandas as pd

from isocompute.files import write_json
from isocompute.fits.data_ablation import fit_train_metrics, train_evals
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
logs = {Path(path).parent.name: pd.read_parquet(path) for path in snakemake.input.logs}
rates = {Path(path).parent.name: pd.read_parquet(path) for path in snakemake.input.pass_rates}
evals = train_evals(logs, rates, params.window)
fits = fit_train_metrics(evals, params.study, params.fits, params.window)
write_json(fits, snakemake.output.fits)
for metric, fit in fits["fits"].items():
    logging.info("%s: optimum at the largest compute %s", metric, fit["optimum_at_max_compute"])
