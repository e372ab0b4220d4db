"""avg@k of the base model on one shard of the pool (rule score_difficulty)."""

import logging

import pandas as pd

from isocompute.difficulty import score_problems, shard_of
from isocompute.generation import make_sampler
from isocompute.problems import write_table
from isocompute.workflow import start_job

start_job(snakemake.log[0])
shard = int(snakemake.wildcards.shard)
problems = shard_of(pd.read_parquet(snakemake.input.pool), shard, snakemake.params.shards)
generation = snakemake.params.generation
sampler = make_sampler(generation, snakemake.params.model, snakemake.params.sampling, snakemake.params.seed + shard)
scores = score_problems(problems, sampler, snakemake.params.samples)
write_table(scores, snakemake.output.shard)
logging.info("scored %d problems, mean avg@%d %.3f", len(scores), snakemake.params.samples, scores.iloc[:, 3].mean())
