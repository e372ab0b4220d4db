"""Merge the difficulty shards into one per-problem table (rule gather_difficulty)."""

import logging

import pandas as pd

from isocompute.problems import write_table
from isocompute.workflow import start_job

start_job(snakemake.log[0])
table = pd.concat([pd.read_parquet(path) for path in snakemake.input.shards], ignore_index=True)
write_table(table.sort_values("id", ignore_index=True), snakemake.output.difficulty)
logging.info("%d problems scored", len(table))
