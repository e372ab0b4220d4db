"""Merge the difficulty shards into one per-problem table (rule gather_difficulty)."""

import logging

from isocompute.files import read_tables, write_table
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
table = read_tables(snakemake.input.shards)
write_table(table.sort_values("id", ignore_index=True), snakemake.output.difficulty)
logging.info("%d problems scored", len(table))
