"""Read a user's problem table (local file or hub id) through `datasets` (rule import_problem_table)."""

import logging

from isocompute.problems import load_problem_table, write_table
from isocompute.workflow import start_job

start_job(snakemake.log[0])
table = load_problem_table(snakemake.params.table["path"], snakemake.params.table.get("split", "train"))
write_table(table, snakemake.output.pool)
logging.info("imported %d problems from %s", len(table), snakemake.params.table["path"])
