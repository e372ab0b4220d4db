"""The base model's metrics on a validation set: the reference line of every figure (rule evaluate_base_model)."""

import logging

import pandas as pd

from isocompute.files import write_table
from isocompute.pipeline.config import sampling_spec
from isocompute.sampling.evaluation import summary_row
from isocompute.sampling.generation import make_sampler, score_problems
from isocompute.script_setup import base_model_of, generation_of, start_job

start_job(snakemake.log[0])
generation = generation_of(snakemake)
sampler = make_sampler(
    generation, base_model_of(snakemake), sampling_spec(snakemake.params.sampling), snakemake.params.seed
)
k = snakemake.params.k
counts = score_problems(sampler, pd.read_parquet(snakemake.input.val), k, snakemake.params.checker)
row = summary_row(counts, k)
write_table(
    pd.DataFrame([{"problem_set": snakemake.wildcards.eval_set, "step": 0, **row}]), snakemake.output.evals
)
write_table(counts, snakemake.output.counts)
logging.info("base model: %s", row)
