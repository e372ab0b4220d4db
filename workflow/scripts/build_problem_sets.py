"""Draw the disjoint train and validation sets from the difficulty buckets (rule build_problem_sets)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.config import problem_set_specs
from isocompute.difficulty import bucket_counts, build_problem_sets, select
from isocompute.problems import write_table
from isocompute.workflow import start_job

start_job(snakemake.log[0])
pool = pd.read_parquet(snakemake.input.pool)
difficulty = pd.read_parquet(snakemake.input.difficulty)
specs = problem_set_specs(snakemake.params.settings)
sets = build_problem_sets(difficulty, specs, snakemake.params.seed)
for spec in specs:
    for part in ("train", "val"):
        path = next(p for p in snakemake.output[part] if Path(p).parent.name == spec.name)
        write_table(select(pool, sets[spec.name][part], difficulty), path)
summary = {
    "bucket_sizes": bucket_counts(difficulty, specs),
    "sets": {name: {part: len(ids) for part, ids in parts.items()} for name, parts in sets.items()},
}
Path(snakemake.output.summary).write_text(json.dumps(summary, indent=2))
logging.info("problem sets: %s", summary)
