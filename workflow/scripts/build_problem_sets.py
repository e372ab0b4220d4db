"""Draw one problem set's train and validation problems from its buckets (rule build_problem_sets)."""

import logging
from pathlib import Path

import pandas as pd

from isocompute.data.difficulty import bucket_sizes, build_problem_set, select
from isocompute.files import write_json, write_table
from isocompute.pipeline.config import problem_set_spec
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
pool = pd.read_parquet(snakemake.input.pool)
difficulty = pd.read_parquet(snakemake.input.difficulty)
pass_rates = {int(Path(path).stem.removeprefix("pass_at")): pd.read_parquet(path) for path in snakemake.input.pass_at}
spec = problem_set_spec(snakemake.wildcards.problem_set, snakemake.params.build)
ids = build_problem_set(difficulty, spec, snakemake.params.seed, snakemake.params.validation_share, pass_rates)
for part in ("train", "val"):
    write_table(select(pool, ids[part], difficulty), snakemake.output[part])
summary = {
    "key": spec.key,
    "bucket_sizes": bucket_sizes(difficulty, spec, pass_rates),
    "shares": [share for _, share in spec.parts],
    "train": len(ids["train"]),
    "val": len(ids["val"]),
}
write_json(summary, snakemake.output.summary)
logging.info("problem set %s: %s", spec.name, summary)
