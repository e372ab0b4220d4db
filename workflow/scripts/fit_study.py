"""Every fit of one study, with bootstrap intervals (rule fit_study); an adaptive sweep's with the arms its
rule stopped settled (its last round says which)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.adaptive.decisions import settled_of_rounds
from isocompute.files import read_tables, write_json
from isocompute.fits.fits_json import fit_configured_study
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
evals = read_tables(snakemake.input.evals)
counts = read_tables(snakemake.input.val_counts)
base = pd.read_parquet(snakemake.input.base).iloc[0]
base_counts = pd.read_parquet(snakemake.input.base_counts)
rounds = getattr(snakemake.input, "last_round", [])  # fit_study_on has none: the rule judged on its own set
last_round = json.loads(Path(rounds[0]).read_text()) if rounds else None
fits = fit_configured_study(
    evals, counts, base, params.study, params.fits, params.k, params.learning_rate, params.seed, base_counts,
    settled_of_rounds(last_round, evals),
)
write_json(fits, snakemake.output.fits)
headline = fits["fits"][params.fits["metric"]][fits["headline"]["compute"]]
logging.info("%s: optimum at the largest compute %s", params.study.name, headline["optimum_at_max_compute"])
