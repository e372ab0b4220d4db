"""avg@k of the base model on one shard of the pool (rule score_difficulty)."""

import logging

import pandas as pd

from isocompute.data.difficulty import score_difficulty, shard_of
from isocompute.files import write_table
from isocompute.pipeline.config import sampling_spec
from isocompute.sampling.generation import make_sampler
from isocompute.script_setup import base_model_of, generation_of, start_job

start_job(snakemake.log[0])
shard = int(snakemake.wildcards.shard)
difficulty = snakemake.params.difficulty
problems = shard_of(pd.read_parquet(snakemake.input.pool), shard, difficulty["shards"])
generation = generation_of(snakemake)
sampler = make_sampler(
    generation,
    base_model_of(snakemake),
    sampling_spec(snakemake.params.sampling),
    snakemake.params.seed + shard,
)
scores = score_difficulty(problems, sampler, difficulty["samples"], snakemake.params.checker)
write_table(scores, snakemake.output.shard)
samples = difficulty["samples"]
logging.info("scored %d problems, mean avg@%d %.3f", len(scores), samples, scores[f"avg@{samples}"].mean())
