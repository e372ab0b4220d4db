"""Train one grid point with TRL's GRPOTrainer (rule train_grpo)."""

import json
import logging

import pandas as pd

from isocompute.config import recipe_of, training_spec
from isocompute.problems import write_table
from isocompute.training import train_run
from isocompute.workflow import base_model_of, start_job

start_job(snakemake.log[0])
point = snakemake.params.point
settings = snakemake.params.settings
table, manifest = train_run(
    base_model_of(snakemake),
    pd.read_parquet(snakemake.input.train),
    point,
    training_spec(settings),
    recipe_of(settings, point.problem_set),
    snakemake.params.run_dir,
)
write_table(table, snakemake.output.log_table)
with open(snakemake.output.checkpoints, "w") as handle:
    json.dump(manifest, handle, indent=2)
logging.info("%s: %d steps, final train reward %.3f", point.run, len(table), table["reward"].iloc[-1])
