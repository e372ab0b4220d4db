"""One round of an adaptive sweep (checkpoint decide_adaptive_round): fit what the study's arms have measured
so far and decide, arm by arm, which extend to the next rung and which stop, with the numbers behind each."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.adaptive.decisions import workflow_round
from isocompute.adaptive.prior import Prior
from isocompute.adaptive.rungs import AdaptiveSettings
from isocompute.files import read_tables, write_json
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
previous = json.loads(Path(snakemake.input.previous[0]).read_text()) if snakemake.input.previous else None
state = workflow_round(
    read_tables(snakemake.input.evals),
    read_tables(snakemake.input.val_counts),
    pd.read_parquet(snakemake.input.base).iloc[0],
    pd.read_parquet(snakemake.input.base_counts),
    params.fits,
    params.k,
    params.seed,
    AdaptiveSettings(**params.settings),
    params.caps,
    {int(n): steps for n, steps in params.rung_steps.items()},
    previous,
    int(snakemake.wildcards.round),
    Prior.from_params(params.prior) if getattr(params, "prior", None) else None,
)
write_json(state, snakemake.output.round)
for decision in state["decisions"]:
    logging.info("n = %s: %s (%s)", decision["n"], decision["action"], decision["reason"])
