"""Every fit of one study, with bootstrap intervals (rule fit_study)."""

import logging

import pandas as pd

from isocompute.files import read_tables, write_json
from isocompute.fits.fits_json import fit_configured_study
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
evals = read_tables(snakemake.input.evals)
counts = read_tables(snakemake.input.val_counts)
base = pd.read_parquet(snakemake.input.base).iloc[0]
base_counts = pd.read_parquet(snakemake.input.base_counts)
fits = fit_configured_study(
    evals, counts, base, params.study, params.fits, params.k, params.learning_rate, params.seed, base_counts
)
write_json(fits, snakemake.output.fits)
headline = fits["fits"][params.fits["metric"]][fits["headline"]["compute"]]
logging.info("%s: optimum at the largest compute %s", params.study.name, headline["optimum_at_max_compute"])
