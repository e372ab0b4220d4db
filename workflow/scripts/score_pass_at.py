"""Staged pass@k of the base model: more rollouts only for problems still all wrong (rule score_pass_at)."""

import logging

import pandas as pd

from isocompute.data.difficulty import staged_pass_at
from isocompute.files import write_json, write_table
from isocompute.pipeline.config import sampling_spec
from isocompute.sampling.generation import make_sampler
from isocompute.script_setup import base_model_of, generation_of, start_job

start_job(snakemake.log[0])
k = int(snakemake.wildcards.k)
sampler = make_sampler(
    generation_of(snakemake),
    base_model_of(snakemake),
    sampling_spec(snakemake.params.sampling),
    snakemake.params.seed + k,
)
table, summary = staged_pass_at(
    pd.read_parquet(snakemake.input.difficulty), pd.read_parquet(snakemake.input.pool), sampler, k,
    snakemake.params.checker,
)  # fmt: skip
sampler.close()
write_table(table, snakemake.output.table)
write_json(summary, snakemake.output.summary)
logging.info(
    "pass@%d: %d of %d problems all wrong; %d rollouts sampled, %d saved against %d for k on every problem",
    k, summary[f"pass@{k}_zero"], summary["problems"], summary["rollouts_sampled"], summary["rollouts_saved"],
    summary["rollouts_k_for_all"],
)  # fmt: skip
