"""One CSV of every run's evaluation rows, the input format of `isocompute fit` (rule gather_evaluations)."""

import logging

import pandas as pd

from isocompute.workflow import start_job

start_job(snakemake.log[0])
table = pd.concat([pd.read_parquet(path) for path in snakemake.input.evals], ignore_index=True)
table.to_csv(snakemake.output.table, index=False)
logging.info("%d evaluation rows from %d runs", len(table), table["run"].nunique())
