"""One CSV of every run's evaluation rows, the input format of `isocompute fit` (rule gather_evaluations)."""

import logging

from isocompute.files import read_tables, write_atomically
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
table = read_tables(snakemake.input.evals)
write_atomically(snakemake.output.table, lambda partial: table.to_csv(partial, index=False))
logging.info("%d evaluation rows from %d runs", len(table), table["run"].nunique())
