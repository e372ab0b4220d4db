"""Score every checkpoint of one run on another validation set (rule evaluate_run_on)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.files import write_table
from isocompute.pipeline.config import sampling_spec
from isocompute.sampling.evaluation import evaluate_checkpoints
from isocompute.sampling.generation import make_sampler
from isocompute.script_setup import generation_of, start_job

start_job(snakemake.log[0])
params = snakemake.params
generation = generation_of(snakemake)
evals, val_counts, _ = evaluate_checkpoints(
    lambda path: make_sampler(generation, path, sampling_spec(params.sampling), params.seed),
    json.loads(Path(snakemake.input.checkpoints).read_text()),
    str(Path(snakemake.input.checkpoints).parent),
    params.point,
    pd.read_parquet(snakemake.input.val),
    None,
    k=params.k,
    train_k=0,
    checker=params.checker,
)
on = snakemake.wildcards.eval_set
write_table(evals.assign(evaluated_on=on), snakemake.output.evals)
write_table(val_counts.assign(evaluated_on=on), snakemake.output.val_counts)
logging.info("evaluated %d checkpoints on %s:\n%s", len(evals), on, evals.to_string())
