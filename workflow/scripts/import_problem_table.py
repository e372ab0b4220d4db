"""Read a user's problem table or Guru-Math (local file or hub id) through `datasets` (rule import_problem_table)."""

import logging

from isocompute.data.problems import load_problem_table
from isocompute.files import write_table
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
table = snakemake.params.table
imported = load_problem_table(
    table["path"], table["split"], table["schema"], snakemake.params.checker, table["data_files"]
)
write_table(imported.problems, snakemake.output[0])  # the pool, or an out-of-domain table
write_table(imported.excluded, snakemake.output.excluded)
for row in imported.excluded.itertuples():
    logging.warning("excluded %s (row %d): %s", row.id, row.row, row.reason)
logging.info(
    "imported %d problems from %s; excluded %d rows",
    len(imported.problems),
    table["path"],
    len(imported.excluded),
)
