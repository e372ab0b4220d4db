"""The paper's training diagnostics of one study's runs (rule tabulate_diagnostics)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.files import write_table
from isocompute.mechanism.diagnostics import base_rows, checkpoint_diagnostics, nstar_by_metric
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
logs = {Path(path).parent.name: pd.read_parquet(path) for path in snakemake.input.logs}
rates = {Path(path).parent.name: pd.read_parquet(path) for path in snakemake.input.pass_rates}
table = checkpoint_diagnostics(logs, rates, params.window)
sampled = next(iter(rates.values()))
sampled_ids = sampled.loc[sampled["step"] == sampled["step"].min(), "id"]
base = base_rows(pd.read_parquet(snakemake.input.train), sampled_ids, table, params.train_k)
table = pd.concat([base, table], ignore_index=True)
nstar = nstar_by_metric(json.loads(Path(snakemake.input.fits).read_text()))
write_table(table, snakemake.output.table)
write_table(nstar, snakemake.output.nstar)
logging.info("diagnostics:\n%s\nn* by metric:\n%s", table.to_string(), nstar.to_string())
