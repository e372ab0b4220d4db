"""One CSV of every run's evaluation rows, the input format of `isocompute fit` (rule gather_evaluations)."""

import logging

from isocompute.problems import read_tables
from isocompute.workflow import start_job

start_job(snakemake.log[0])
table = read_tables(snakemake.input.evals)
table.to_csv(snakemake.output.table, index=False)
logging.info("%d evaluation rows from %d runs", len(table), table["run"].nunique())
