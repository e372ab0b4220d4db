"""Per-n fits, frontier and n*(C) fit of one fixed-B_problem study (rule fit_frontier)."""

import json
import logging

import pandas as pd

from isocompute.fitting import fit_study
from isocompute.workflow import start_job

start_job(snakemake.log[0])
options = snakemake.params.fits
evals = pd.concat([pd.read_parquet(path) for path in snakemake.input.evals], ignore_index=True)
fits = fit_study(evals, options["metric"], options["compute"], options["min_compute"], options["frontier_points"])
with open(snakemake.output.fits, "w") as handle:
    json.dump(fits, handle, indent=2)
logging.info("n*(C) fit: %s", fits["nstar_fit"])
