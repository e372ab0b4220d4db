"""Every fit of one study, with bootstrap intervals (rule fit_study)."""

import json
import logging

import pandas as pd

from isocompute.study_fits import fit_configured_study
from isocompute.problems import read_tables
from isocompute.workflow import start_job

start_job(snakemake.log[0])
params = snakemake.params
evals = read_tables(snakemake.input.evals)
counts = read_tables(snakemake.input.val_counts)
base = pd.read_parquet(snakemake.input.base).iloc[0]
base_counts = pd.read_parquet(snakemake.input.base_counts)
fits = fit_configured_study(
    evals, counts, base, params.study, params.fits, params.k, params.recipe, params.seed, base_counts
)
with open(snakemake.output.fits, "w") as handle:
    json.dump(fits, handle, indent=2)
headline = fits["fits"][params.fits["metric"]][fits["headline"]["compute"]]
logging.info("%s: optimum at the largest compute %s", params.study.name, headline["optimum_at_max_compute"])
