"""Score every checkpoint of one run (rule evaluate_run), or those a rung of an adaptive sweep added
(rule evaluate_run_rung: the checkpoints after the arm's previous rung)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.files import write_table
from isocompute.pipeline.config import sampling_spec
from isocompute.sampling.evaluation import evaluate_checkpoints, new_checkpoints
from isocompute.sampling.generation import make_sampler
from isocompute.script_setup import generation_of, start_job

start_job(snakemake.log[0])
evaluation = snakemake.params.evaluation
generation = generation_of(snakemake)
train = pd.read_parquet(snakemake.input.train)
train_sample = train.sample(n=evaluation["train_sample_size"], random_state=snakemake.params.seed)
evals, val_counts, train_rates = evaluate_checkpoints(
    lambda path: make_sampler(
        generation, path, sampling_spec(snakemake.params.sampling), snakemake.params.seed
    ),
    new_checkpoints(json.loads(Path(snakemake.input.checkpoints).read_text()), snakemake.params.get("after_step", 0)),
    snakemake.params.get("run_dir") or str(Path(snakemake.input.checkpoints).parent),
    snakemake.params.point,
    pd.read_parquet(snakemake.input.val),
    train_sample,
    k=evaluation["k"],
    train_k=evaluation["train_k"],
    checker=snakemake.params.checker,
)
write_table(evals, snakemake.output.evals)
write_table(val_counts, snakemake.output.val_counts)
write_table(train_rates, snakemake.output.train_pass_rates)
logging.info("evaluated %d checkpoints:\n%s", len(evals), evals.to_string())
